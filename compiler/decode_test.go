package compiler

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/facets-dev/facets/cue"
)

// TestDecodeAcceptedMatchesJSON checks that a config.json the generated
// validator accepted is read from its parse exactly as json.Unmarshal
// reads it, and that documents it cannot take over exactly are left to
// json.Unmarshal.
func TestDecodeAcceptedMatchesJSON(t *testing.T) {
	schema := loadSchema(t)
	for _, tc := range []struct {
		name string
		doc  string
		fast bool // decodeAccepted takes it over
	}{
		{"minimal", `{"version": 1, "name": "p", "tools": ["read"]}`, true},
		{"every field", `{"version": 1, "name": "p", "description": "d", "model": "anthropic/claude-sonnet-4-5",
			"thinkingLevel": "high", "sessionPersistence": "persistent", "invocation": "manual",
			"tools": ["read", "bash"], "skills": ["check", "./skills/x"], "instructions": "inst.md"}`, true},
		{"escapes", `{"version": 1, "name": "p", "description": "a \"quoted\" \\ back\/slash\n\ttab", "tools": ["read"]}`, true},
		{"unicode", `{"version": 1, "name": "p", "description": "grüße ✓", "tools": ["read"]}`, true},
		{"empty skills", `{"version": 1, "name": "p", "tools": ["read"], "skills": []}`, true},
		{"members reordered", `{"tools": ["read"], "name": "p", "version": 1}`, true},
		{"version as 1.0", `{"version": 1.0, "name": "p", "tools": ["read"]}`, true},
		{"version as 1e0", `{"version": 1e0, "name": "p", "tools": ["read"]}`, false},
		{"unicode escape", `{"version": 1, "name": "p", "description": "\u00fc", "tools": ["read"]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := schema.ValidateJSON(cue.Profile, "config.json", []byte(tc.doc))
			var want profileConfig
			if err := json.Unmarshal([]byte(tc.doc), &want); err != nil && tc.fast {
				t.Fatalf("json.Unmarshal: %v", err)
			}
			got := profileConfig{Name: "untouched"}
			ok := decodeAccepted(res, &got)
			if ok != tc.fast {
				t.Fatalf("decodeAccepted = %v, want %v (schema OK %v)", ok, tc.fast, res.OK())
			}
			if !ok {
				if got.Name != "untouched" {
					t.Errorf("decodeAccepted changed cfg though it declined: %+v", got)
				}
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decodeAccepted = %+v\njson.Unmarshal = %+v", got, want)
			}
		})
	}
}

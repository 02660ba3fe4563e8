package cue

import (
	"slices"
	"strings"
	"testing"
)

// TestFields checks what editors learn from the schema: every field with
// its comment, required ones marked, enums with their values.
func TestFields(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		def      Definition
		name     string
		required bool
		kind     string
		enum     []string
		doc      string
	}{
		{Profile, "version", true, "number", []string{"1"}, "Format version"},
		{Profile, "name", true, "string", nil, "Profile name"},
		{Profile, "invocation", false, "string", []string{"both", "manual"}, "Who may start the profile"},
		{Profile, "sessionPersistence", false, "string", []string{"ephemeral", "persistent"}, "saved and resumable"},
		{Profile, "tools", true, "list", nil, "Non-MCP tools"},
		{Role, "thinking", false, "string", []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}, "Thinking level"},
		{Role, "spawning", false, "bool", nil, "spawn subagents"},
		{Role, "session-mode", false, "string", []string{"standalone", "lineage-only", "fork"}, "child session"},
	} {
		fields, err := s.Fields(tc.def)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(fields, func(f Field) bool { return f.Name == tc.name })
		if i < 0 {
			t.Errorf("%s has no field %s", tc.def, tc.name)
			continue
		}
		f := fields[i]
		if f.Required != tc.required || f.Kind != tc.kind || !slices.Equal(f.Enum, tc.enum) || !strings.Contains(f.Doc, tc.doc) {
			t.Errorf("%s.%s = %+v, want required %v, kind %q, enum %v, doc containing %q", tc.def, tc.name, f, tc.required, tc.kind, tc.enum, tc.doc)
		}
	}
}

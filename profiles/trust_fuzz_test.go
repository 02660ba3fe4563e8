package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// FuzzDecideTrust feeds DecideTrust an arbitrary trust.json and Pi
// settings.json. It must never panic; a refusal is a *SettingsError naming
// the file, placed inside it, and worded in JSON terms (never Go types);
// an accepted pair decides as Pi would: the nearest non-null trust.json
// entry for cwd or an ancestor, else "always"/"never", else untrusted.
func FuzzDecideTrust(f *testing.F) {
	const cwd = "/fuzz/proj" // absent, so canonical leaves it as is
	for _, seed := range [][2]string{
		{`{"/fuzz/proj": true}`, `{"defaultProjectTrust": "never"}`},
		{`{"/fuzz": false, "/fuzz/proj": null}`, `{}`},
		{"\xEF\xBB\xBF{\"/\": true}", "\xEF\xBB\xBF{\"defaultProjectTrust\": \"always\"}"},
		{`{}`, `{"defaultProjectTrust": "ask", "theme": "dark"}`},
		{`{"/fuzz/proj": "yes"}`, `{}`},
		{`{"/fuzz/proj": true,`, `{}`},
		{`[]`, `{"defaultProjectTrust": 1}`},
		{`{}`, `[1]`},
		{"{\n\"/a\": true,\n\"/fuzz\": [1]}", "null"},
		{"", "\n\n  }"},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, trust, settings []byte) {
		dir := t.TempDir()
		trustFile, settingsFile := filepath.Join(dir, "trust.json"), filepath.Join(dir, "settings.json")
		safefiletest.Put(t, trustFile, trust)
		safefiletest.Put(t, settingsFile, settings)
		got, err := DecideTrust(Env{AgentDir: dir, Cwd: cwd}, nil, nil)
		if err != nil {
			var se *SettingsError
			if !errors.As(err, &se) {
				t.Fatalf("error is %T, not a *SettingsError: %v", err, err)
			}
			doc := map[string][]byte{trustFile: trust, settingsFile: settings}[se.Path]
			if doc == nil {
				t.Fatalf("error names %q, neither file: %v", se.Path, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, se.Path) {
				t.Fatalf("error does not name its file: %v", err)
			}
			if strings.Contains(msg, "Go value") || strings.Contains(msg, "Go struct") || strings.Contains(msg, "map[") || strings.Contains(msg, "*bool") {
				t.Fatalf("error speaks of Go types: %v", err)
			}
			if se.Line < 1 || se.Column < 1 || se.Line > bytes.Count(doc, []byte("\n"))+1 {
				t.Fatalf("error at line %d column %d, outside the %d-line file: %v", se.Line, se.Column, bytes.Count(doc, []byte("\n"))+1, err)
			}
			if se.Path == settingsFile && !json.Valid(bytes.TrimPrefix(trust, utf8BOM)) {
				t.Fatalf("settings.json blamed while trust.json is not even JSON: %v", err)
			}
			return
		}
		// The reference decision, from the documents themselves.
		var entries map[string]*bool
		if json.Unmarshal(bytes.TrimPrefix(trust, utf8BOM), &entries) != nil {
			t.Fatalf("accepted a trust.json encoding/json refuses: %q", trust)
		}
		for _, p := range []string{"/fuzz/proj", "/fuzz", "/"} {
			if v := entries[p]; v != nil {
				if got != (Trust{Trusted: *v, Reason: "trust.json", Path: p}) {
					t.Fatalf("trust.json says %s: %v, decided %+v", p, *v, got)
				}
				return
			}
		}
		var s struct {
			DefaultProjectTrust string `json:"defaultProjectTrust"`
		}
		if json.Unmarshal(bytes.TrimPrefix(settings, utf8BOM), &s) != nil {
			t.Fatalf("accepted a settings.json encoding/json refuses: %q", settings)
		}
		want := Trust{Reason: "default"}
		if s.DefaultProjectTrust == "always" || s.DefaultProjectTrust == "never" {
			want = Trust{Trusted: s.DefaultProjectTrust == "always", Reason: "settings", Path: settingsFile}
		}
		if got != want {
			t.Fatalf("settings say %q, decided %+v, want %+v", s.DefaultProjectTrust, got, want)
		}
	})
}

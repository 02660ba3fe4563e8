package compiler

import (
	"bytes"
	"testing"

	"github.com/facets-dev/facets/profiles"
)

// FuzzValidateEntry feeds a profile's config.json to the compiler's entry
// check: the schema, then the rules it cannot express, which also run on
// the fields of a document with schema errors. It must never panic; every
// diagnostic is complete, names the file and the profile and sits inside
// the file; and a profile is either usable with no error or refused with
// at least one, never dropped silently.
func FuzzValidateEntry(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"name":"fuzz","tools":["read","bash"],"model":"anthropic/claude-sonnet-4-5","thinkingLevel":"high"}`,
		`{"version":1,"name":"fuzz","tools":["read"],"skills":["code-review","./s",""],"instructions":"Review.","invocation":"manual","sessionPersistence":"persistent"}`,
		`{"version":1,"name":"other","tools":["read"],"model":"no-slash"}`,
		`{"version":1,"name":1,"tools":"read","skills":[1,"x"],"model":["a/b"]}`,
		`{"version":2,"name":"fuzz","tools":[],"unknown":true}`,
		"\uFEFF{\"version\":1,\"name\":\"fuzz\",\"tools\":[\"read\"]}",
		`{"version":1,"name":"fuzz","tools":["read"],"instructions":"` + string(bytes.Repeat([]byte("x"), 70000)) + `"}`,
		`{"version":1,"name":"fuzz","name":"dup","tools":["read"]}`,
		`[]`, `null`, `{`, ``, "\xff",
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`{"version":1,"name":"fuzz","tools":["read"]}`), true)
	v := validator{schema: loadSchema(f)}
	f.Fuzz(func(t *testing.T, data []byte, legacy bool) {
		const path = "/fuzz/profiles/fuzz/config.json"
		e := profiles.Entry{Name: "fuzz", Scope: profiles.Global, Form: profiles.Directory, Dir: "/fuzz/profiles/fuzz", ConfigPath: path, Config: data}
		if legacy {
			e.Form, e.Dir = profiles.Legacy, "/fuzz/profiles"
		}
		v.diags = nil
		cand, ok := v.validateEntry(e)
		wantPlaced(t, v.diags, path, "fuzz", data)
		switch {
		case ok:
			if HasErrors(v.diags) || cand == nil || cand.config.Name != "fuzz" || len(cand.config.Tools) == 0 {
				t.Fatalf("usable profile with errors or without its name and tools: %v, %+v", v.diags, cand)
			}
		case !HasErrors(v.diags):
			t.Fatalf("refused without an error: %v", v.diags)
		}
	})
}

// wantPlaced fails t unless every diagnostic of the file at path (holding
// data) is complete: an error or a warning with a code and a message, about
// subject, in that file, at a position inside it.
func wantPlaced(t *testing.T, diags []Diagnostic, path, subject string, data []byte) {
	t.Helper()
	lines := bytes.Count(data, []byte("\n")) + 1
	for _, d := range diags {
		if d.Code == "" || d.Message == "" || d.File != path || d.Subject != subject || (d.Severity != Error && d.Severity != Warning) {
			t.Fatalf("incomplete diagnostic %+v (subject %q)", d, subject)
		}
		if d.Line < 0 || d.Line > lines || d.Column < 0 {
			t.Fatalf("diagnostic %s at %d:%d outside a %d-line file", d.Code, d.Line, d.Column, lines)
		}
	}
}

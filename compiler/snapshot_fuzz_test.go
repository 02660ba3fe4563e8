package compiler

import (
	"bytes"
	"testing"

	"github.com/facets-dev/facets/cue"
)

// FuzzOpenSnapshot feeds OpenSnapshot what FACETS_MANIFEST may point at:
// anything. It must never panic, and it must never accept a document that
// #Manifest (ParseManifest, which evaluates the schema) refuses: the
// byte-identical shortcut may skip the schema only because the compiler's
// own output always passes it. A refusal always carries a finding. Run it
// with -fuzzminimizetime 200x: minimizing a manifest-sized input takes the
// default minute per new input.
func FuzzOpenSnapshot(f *testing.F) {
	_, m, opts := verifyTree(f)
	data, err := m.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(bytes.Replace(data, []byte(`"ephemeral"`), []byte(`"forever"`), 1))
	f.Add(bytes.Replace(data, []byte(`"version": 1`), []byte(`"version": 2`), 1))
	f.Add(bytes.Replace(data, []byte("\n"), nil, -1))
	f.Add([]byte(`{"version": 1, "cwd": "/", "agentDir": "/nonexistent"}`))
	f.Add([]byte(`{"version": 1}`))
	f.Add([]byte(`[]`))
	// One schema each, kept across inputs: compiling CUE per input would
	// leave the fuzzer a few inputs a minute.
	open, check := loadSchema(f), loadSchema(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		if res := check.ValidateJSON(cue.Manifest, "m.json", doc); !res.OK() && len(res.Findings) == 0 {
			t.Fatalf("#Manifest refuses the document without a finding:\n%s", doc)
		}
		got, _, err := OpenSnapshot(open, "m.json", doc, opts)
		if err != nil {
			return
		}
		if got == nil {
			t.Fatal("OpenSnapshot accepted the document but returned no manifest")
		}
		if _, perr := ParseManifest(check, "m.json", doc); perr != nil {
			t.Fatalf("OpenSnapshot accepted a document #Manifest refuses (%v):\n%s", perr, doc)
		}
	})
}

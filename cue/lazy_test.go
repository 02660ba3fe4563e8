package cue_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/profiles"
)

// TestCurrentSnapshotNeedsNoCUE: a Main that starts from a frozen manifest
// byte for byte what a fresh compile writes pays no CUE compile (the
// compiler's own output is valid by construction), while any other
// snapshot, even one that differs only in layout, is checked against
// #Manifest with CUE. The schema's state is visible only to this package's
// tests (Compiled), hence the test lives here and drives the compiler.
func TestCurrentSnapshotNeedsNoCUE(t *testing.T) {
	root := t.TempDir()
	agent := filepath.Join(root, "agent")
	p := filepath.Join(agent, "facets", "profiles", "r", "config.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"version":1,"name":"r","tools":["read"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := compiler.Options{Env: profiles.Env{AgentDir: agent, Cwd: root, Home: filepath.Join(root, "home")}}
	load := func() *cue.Schema {
		s, err := cue.Load()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	m, _, err := compiler.Compile(load(), opts)
	if err != nil {
		t.Fatal(err)
	}
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		data     []byte
		compiled bool
	}{
		{"identical", data, false},
		{"compacted", compact.Bytes(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := load()
			if _, ds, err := compiler.OpenSnapshot(schema, "m.json", tc.data, opts); err != nil || len(ds) != 0 {
				t.Fatalf("OpenSnapshot: %v, %v; want current", ds, err)
			}
			if schema.Compiled() != tc.compiled {
				t.Errorf("CUE compiled: %v, want %v", schema.Compiled(), tc.compiled)
			}
		})
	}
}

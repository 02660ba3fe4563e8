package compiler

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/golden"
	"github.com/facets-dev/facets/profiles"
)

// TestExampleManifestGolden compiles the README's example tree and compares
// the whole manifest with testdata/golden/example.manifest.json, where the
// example's absolute path is written as $EXAMPLE. The compiled manifest must
// also satisfy the #Manifest schema.
func TestExampleManifestGolden(t *testing.T) {
	example, err := filepath.Abs("../testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	example, err = filepath.EvalSymlinks(example)
	if err != nil {
		t.Fatal(err)
	}
	schema := loadSchema(t)
	env, err := profiles.NewEnv(func(string) string { return filepath.Join(example, "agent") },
		filepath.Join(example, "home"), filepath.Join(example, "project", "service"))
	if err != nil {
		t.Fatal(err)
	}
	trusted := true
	m, ds, err := Compile(schema, Options{Env: env, TrustFlag: &trusted,
		RolePacks: []string{filepath.Join(example, "rolepack", "roles")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 0 {
		t.Errorf("the example must compile cleanly, got %v", ds)
	}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if res := schema.ValidateJSON(cue.Manifest, "manifest.json", b); !res.OK() {
		t.Errorf("manifest violates #Manifest: %+v", res.Findings)
	}
	got := strings.ReplaceAll(string(b), example, "$EXAMPLE")
	golden.Check(t, "../testdata/golden/example.manifest.json", []byte(got))
}

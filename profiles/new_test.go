package profiles_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/profiles"

	cuelang "cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/encoding/jsonschema"
)

// TestSchemaPointsAtInstalledSchema follows each scaffolded profile's
// "$schema" to the file InstallSchema wrote and validates the profile
// against it as an editor would, so a wrong relative path or a scaffold the
// schema rejects fails here.
func TestSchemaPointsAtInstalledSchema(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		w := profiles.GlobalTarget(t.TempDir())
		paths, err := profiles.NewProfile(w, "demo", legacy)
		if err != nil {
			t.Fatal(err)
		}
		installed, err := installSchema(t, w)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := os.ReadFile(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Schema string `json:"$schema"`
		}
		if err := json.Unmarshal(cfg, &doc); err != nil {
			t.Fatal(err)
		}
		if got := filepath.Join(filepath.Dir(paths[0]), doc.Schema); got != installed {
			t.Errorf("legacy=%v: $schema %q resolves to %s, want %s", legacy, doc.Schema, got, installed)
		}
		validate(t, installed, cfg, true)
		// The schema is not vacuous: a profile without tools fails.
		validate(t, installed, []byte(strings.Replace(string(cfg), `"tools"`, `"tols"`, 1)), false)
	}
}

func validate(t *testing.T, schemaPath string, doc []byte, wantOK bool) {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cuecontext.New()
	sv := ctx.CompileBytes(b)
	f, err := jsonschema.Extract(sv, &jsonschema.Config{})
	if err != nil {
		t.Fatalf("extract %s: %v", schemaPath, err)
	}
	schema := ctx.BuildFile(f)
	err = schema.Unify(ctx.CompileBytes(doc)).Validate(cuelang.Concrete(true))
	if (err == nil) != wantOK {
		t.Errorf("validate against %s: err = %v, want ok=%v\n%s", schemaPath, err, wantOK, doc)
	}
}

func TestRefusesOverwrite(t *testing.T) {
	w := profiles.GlobalTarget(t.TempDir())
	if _, err := profiles.NewProfile(w, "a", true); err != nil {
		t.Fatal(err)
	}
	for _, legacy := range []bool{false, true} {
		if _, err := profiles.NewProfile(w, "a", legacy); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("Profile(existing, legacy=%v) = %v, want already exists", legacy, err)
		}
	}
	if _, err := profiles.NewRole(w, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := profiles.NewRole(w, "r"); err == nil {
		t.Error("Role(existing): no error")
	}
}

// installSchema installs the JSON Schema facets schema --install writes.
func installSchema(t *testing.T, w profiles.Target) (string, error) {
	t.Helper()
	schema, err := cue.Load()
	if err != nil {
		t.Fatal(err)
	}
	b, err := schema.JSONSchema(cue.Profile)
	if err != nil {
		t.Fatal(err)
	}
	return profiles.InstallSchema(w, append(b, '\n'))
}

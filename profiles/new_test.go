package profiles_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/safefile/safefiletest"
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

// TestInstallSchemaNeverWritesThroughRepository: a cloned repository that
// ships .pi/facets/profile.schema.json as a link to a file of the user's
// gets the link replaced and the file untouched; a FIFO there is refused
// instead of blocking the command, in either scope.
func TestInstallSchemaNeverWritesThroughRepository(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	bashrc := filepath.Join(home, ".bashrc")
	os.WriteFile(bashrc, []byte("# mine\n"), 0o644)
	w := profiles.ProjectTarget(project)
	os.MkdirAll(w.FacetsDir, 0o755)
	link := filepath.Join(w.FacetsDir, profiles.SchemaFile)
	if err := os.Symlink(bashrc, link); err != nil {
		t.Fatal(err)
	}
	if _, err := installSchema(t, w); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "# mine\n" {
		t.Errorf("the link's target was overwritten: %.40q", b)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link was not replaced by the schema: %v %v", fi, err)
	}
	for _, w := range []profiles.Target{profiles.ProjectTarget(t.TempDir()), profiles.GlobalTarget(t.TempDir())} {
		os.MkdirAll(w.FacetsDir, 0o755)
		fifo := filepath.Join(w.FacetsDir, profiles.SchemaFile)
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		safefiletest.Within(t, func() { _, err = installSchema(t, w) })
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("%s: install over a FIFO: err = %v", w.FacetsDir, err)
		}
	}
}

// TestNewNeverLeavesRepository: a project whose .pi/facets or .pi/agents
// is a link to elsewhere gets no profile and no role: the files would land
// outside the repository.
func TestNewNeverLeavesRepository(t *testing.T) {
	project, outside := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(project, ".pi"), 0o755)
	for _, d := range []string{"facets", "agents"} {
		if err := os.Symlink(outside, filepath.Join(project, ".pi", d)); err != nil {
			t.Fatal(err)
		}
	}
	w := profiles.ProjectTarget(project)
	for _, legacy := range []bool{false, true} {
		if _, err := profiles.NewProfile(w, "demo", legacy); err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("legacy=%v: err = %v, want a symlink refusal", legacy, err)
		}
	}
	if _, err := profiles.NewRole(w, "demo"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("role: err = %v, want a symlink refusal", err)
	}
	if _, err := installSchema(t, w); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("schema: err = %v, want a symlink refusal", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the repository: %v", ents)
	}
	// A dangling link at a role's own path is not followed either.
	p2 := t.TempDir()
	os.MkdirAll(filepath.Join(p2, ".pi", "agents"), 0o755)
	os.Symlink(filepath.Join(outside, "x.md"), filepath.Join(p2, ".pi", "agents", "demo.md"))
	if _, err := profiles.NewRole(profiles.ProjectTarget(p2), "demo"); err == nil {
		t.Error("role written through a dangling link")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the repository: %v", ents)
	}
}

// TestSettingsColumnsMatchProfileDiagnostics: a trust.json or settings.json
// error is placed as a config.json error on the same bytes is: after a
// leading byte order mark (which editors do not show and Pi strips), with
// the column counting bytes, the rule of every facets diagnostic.
func TestSettingsColumnsMatchProfileDiagnostics(t *testing.T) {
	schema, err := cue.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		"\uFEFF{\"é😀\": true \"x\": 1}",       // syntax error after multi-byte text, with a BOM
		"{\n  \"/é\": true,\n  \"/ü\" tru\n}", // on a later line
		"\uFEFF{\"é😀\": true,}",               // trailing comma
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "trust.json"), []byte(doc), 0o600)
		_, err := profiles.DecideTrust(profiles.Env{AgentDir: dir, Cwd: "/nowhere"}, nil, nil)
		var se *profiles.SettingsError
		if !errors.As(err, &se) {
			t.Fatalf("%q: err = %v", doc, err)
		}
		res := schema.ValidateJSON(cue.Profile, "config.json", []byte(doc))
		if len(res.Findings) != 1 {
			t.Fatalf("%q: profile findings %v", doc, res.Findings)
		}
		if f := res.Findings[0]; se.Line != f.Line || se.Column != f.Column {
			t.Errorf("%q: trust.json error at %d:%d, config.json error at %d:%d", doc, se.Line, se.Column, f.Line, f.Column)
		}
	}
}

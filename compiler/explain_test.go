package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/golden"
	"github.com/facets-dev/facets/profiles"
)

// recordArgv is the SubArgvFunc of these tests: the runtime's real argv is
// tested in runtime/launch and through the commands; here it shows what
// explain hands the runtime (the profile, trust, title and invocation).
func recordArgv(p manifest.Profile, trusted bool, title string, manual bool) []string {
	return []string{"--profile", p.Name, "--title", title, "--trusted=" + strconv.FormatBool(trusted),
		"--manual=" + strconv.FormatBool(manual), "--tools", strings.Join(p.Launch.Tools, ",")}
}

// explain runs ExplainProfile or ExplainRole (kind "profile" or "role") and
// returns the explanation with its text and JSON forms.
func explain(t *testing.T, opts Options, kind, name string) (*Explanation, string, string) {
	t.Helper()
	schema := loadSchema(t)
	var x *Explanation
	var err error
	switch kind {
	case "profile":
		x, err = ExplainProfile(schema, opts, name, recordArgv)
	case "role":
		x, err = ExplainRole(schema, opts, name)
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := x.Write(&text, FormatText); err != nil {
		t.Fatal(err)
	}
	if err := x.Write(&js, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back Explanation
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON output does not decode: %v\n%s", err, js.String())
	}
	return x, text.String(), js.String()
}

func statuses(x *Explanation) []string {
	var out []string
	for _, d := range x.Definitions {
		out = append(out, d.Scope+":"+d.Status)
	}
	return out
}

// TestExplainExample explains names of the bundled example tree (the one
// the README compiles) and compares the text and JSON output with the
// sections of testdata/golden/explain-example.txtar, the example's path
// written as $EXAMPLE.
func TestExplainExample(t *testing.T) {
	example, err := filepath.Abs("../testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	if example, err = filepath.EvalSymlinks(example); err != nil {
		t.Fatal(err)
	}
	const archivePath = "../testdata/golden/explain-example.txtar"
	archive, err := txtar.ParseFile(archivePath)
	if err != nil && !golden.Update() {
		t.Fatalf("%v (run with %s=1 to create it)", err, golden.EnvVar)
	}
	if archive == nil {
		archive = &txtar.Archive{Comment: []byte("Golden output of TestExplainExample (compiler/explain_test.go): explain's text and JSON forms on testdata/example.\n")}
	}
	yes, no := true, false
	for _, tc := range []struct {
		name       string
		kind, what string
		trust      *bool
		rolePack   bool
		found      bool
		statuses   []string // scope:status of each definition, nearest first
		skills     []string // origin of each skill
		instr      string   // instructions source
		manual     bool
		near       []string
	}{
		{name: "project-masks-global", kind: "profile", what: "reviewer", trust: &yes, found: true,
			statuses: []string{"project:effective", "global:masked"}, skills: []string{"name"}, instr: "instructions.md"},
		{name: "untrusted-global", kind: "profile", what: "reviewer", found: true,
			statuses: []string{"global:effective"}, skills: []string{"private", "name"}, instr: "instructions.md"},
		{name: "private-skills", kind: "profile", what: "writer", trust: &yes, found: true,
			statuses: []string{"project:effective"}, skills: []string{"private"}, instr: "instructions.md"},
		{name: "legacy-inline", kind: "profile", what: "oracle", trust: &no, found: true,
			statuses: []string{"global:effective"}, instr: "inline"},
		{name: "manual", kind: "profile", what: "review", trust: &yes, found: true,
			statuses: []string{"global:effective"}, instr: "inline", manual: true},
		{name: "unknown-profile", kind: "profile", what: "wrter", trust: &yes, near: []string{"writer"}},
		{name: "role-global", kind: "role", what: "scout", found: true, statuses: []string{"global:effective"}},
		{name: "role-project-over-pack", kind: "role", what: "test-writer", trust: &yes, rolePack: true, found: true,
			statuses: []string{"project:effective", "package:masked"}},
		{name: "role-pack", kind: "role", what: "security-reviewer", rolePack: true, found: true,
			statuses: []string{"package:effective"}},
		{name: "unknown-role", kind: "role", what: "scot", near: []string{"scout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := profiles.NewEnv(func(string) string { return filepath.Join(example, "agent") },
				filepath.Join(example, "home"), filepath.Join(example, "project", "service"))
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Env: env, TrustFlag: tc.trust}
			if tc.rolePack {
				opts.RolePacks = []string{filepath.Join(example, "rolepack", "roles")}
			}
			x, text, js := explain(t, opts, tc.kind, tc.what)
			if x.Found != tc.found || !slices.Equal(statuses(x), tc.statuses) || !slices.Equal(x.NearMatches, tc.near) {
				t.Errorf("found %v, definitions %v, near %v; want %v, %v, %v", x.Found, statuses(x), x.NearMatches, tc.found, tc.statuses, tc.near)
			}
			if tc.kind == "profile" && tc.found {
				var origins []string
				for _, s := range x.Skills {
					origins = append(origins, s.Origin)
					if !s.Passed || !filepath.IsAbs(s.Path) {
						t.Errorf("skill %+v: want an absolute path that is passed", s)
					}
				}
				if !slices.Equal(origins, tc.skills) || x.Instructions.Source != tc.instr {
					t.Errorf("skills %v, instructions %s; want %v, %s", origins, x.Instructions.Source, tc.skills, tc.instr)
				}
				want := recordArgv(*x.Profile, x.Trust.Trusted, tc.what, tc.manual)
				if !slices.Equal(x.SubArgv, want) {
					t.Errorf("sub argv %q, want %q", x.SubArgv, want)
				}
			}
			if tc.found && (tc.kind == "profile") != (x.Profile != nil) || tc.found && (tc.kind == "role") != (x.Role != nil) {
				t.Errorf("profile %v, role %v for a found %s", x.Profile != nil, x.Role != nil, tc.kind)
			}
			golden.Section(t, archivePath, archive, tc.name+".txt", strings.ReplaceAll(text, example, "$EXAMPLE"))
			golden.Section(t, archivePath, archive, tc.name+".json", strings.ReplaceAll(js, example, "$EXAMPLE"))
		})
	}
	golden.SaveArchive(t, archivePath, archive)
}

// TestExplainFixtures runs testdata/explain/*.txtar: trees for each status
// a definition can have and each branch of the text form. A fixture's
// comment holds the compile fixtures' directives plus `explain profile|role
// NAME`, and `want/statuses`, `want/text` and `want/json` hold the golden
// output ($ROOT for the tree).
func TestExplainFixtures(t *testing.T) {
	paths, err := filepath.Glob("../testdata/explain/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			f := loadFixture(t, path)
			if len(f.explain) != 2 {
				t.Fatalf("%s: no `explain profile|role NAME` directive", path)
			}
			x, text, js := explain(t, f.opts, f.explain[0], f.explain[1])
			var b strings.Builder
			for _, d := range x.Definitions {
				b.WriteString(d.Scope + " " + d.Status + ": " + d.Reason + "\n")
			}
			f.check(t, "want/statuses", b.String())
			f.check(t, "want/text", text)
			f.check(t, "want/json", js)
			f.save(t)
		})
	}
}

// TestExplainEscapesText: a name or path from the user or a file cannot
// drive the terminal through explain's text form; JSON keeps it as it is.
func TestExplainEscapesText(t *testing.T) {
	x := &Explanation{Kind: "profile", Name: "evil\x1b[2J", Decision: "no scope defines a profile named 'evil\x1b[2J'", NearMatches: []string{"e\nvil"}}
	var text, js bytes.Buffer
	if err := x.Write(&text, FormatText); err != nil {
		t.Fatal(err)
	}
	if want := "profile evil\\x1b[2J: no scope defines a profile named 'evil\\x1b[2J'\ndid you mean: e\\nvil?\n"; text.String() != want {
		t.Errorf("text = %q, want %q", text.String(), want)
	}
	if err := x.Write(&js, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back Explanation
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Name != x.Name {
		t.Errorf("JSON name %q (%v), want %q", back.Name, err, x.Name)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

var errWrite = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errWrite
	}
	w.n -= len(p)
	return len(p), nil
}

// TestExplainWriteErrors: a failing output is reported, wherever it fails.
func TestExplainWriteErrors(t *testing.T) {
	f := loadFixture(t, "../testdata/explain/invalid-hides-broader.txtar")
	x, text, _ := explain(t, f.opts, f.explain[0], f.explain[1])
	if len(x.Diagnostics) == 0 {
		t.Fatal("fixture lost its point: no diagnostics section to fail in")
	}
	for n := range len(text) {
		if err := x.Write(&failingWriter{n: n}, FormatText); !errors.Is(err, errWrite) {
			t.Errorf("text, failing after %d bytes: %v, want %v", n, err, errWrite)
		}
	}
	if err := x.Write(&failingWriter{}, FormatJSON); !errors.Is(err, errWrite) {
		t.Errorf("json: %v, want %v", err, errWrite)
	}
	unknown := &Explanation{Kind: "role", Name: "x", Decision: "no layer defines a role named 'x'"}
	if err := unknown.Write(&failingWriter{}, FormatText); !errors.Is(err, errWrite) {
		t.Errorf("unknown name: %v, want %v", err, errWrite)
	}
}

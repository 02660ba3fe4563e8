package compiler

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/golden"
	"github.com/facets-dev/facets/profiles"
)

// fixture is a txtar case: its comment holds directives, its files form a
// tree with agent/ as Pi's agent dir and home/ as the home directory, and
// the sections "want/diagnostics" and "want/profiles" hold the golden output.
type fixture struct {
	path    string
	archive *txtar.Archive
	root    string
	opts    Options
	explain []string // "explain profile|role NAME": what an explain fixture explains
}

// writeFixtureTree parses the txtar fixture at path and writes its files,
// except the want sections ("want" and "want/…"), into a fresh directory
// (its symlinks resolved) with $ROOT replaced by that directory. It returns
// the archive and the directory.
func writeFixtureTree(t *testing.T, path string) (*txtar.Archive, string) {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree := &txtar.Archive{}
	for _, f := range a.Files {
		if f.Name != "want" && !strings.HasPrefix(f.Name, "want/") {
			tree.Files = append(tree.Files, txtar.File{Name: f.Name, Data: bytes.ReplaceAll(f.Data, []byte("$ROOT"), []byte(root))})
		}
	}
	if err := txtar.Write(tree, root); err != nil {
		t.Fatal(err)
	}
	return a, root
}

func loadFixture(t *testing.T, path string) *fixture {
	t.Helper()
	a, root := writeFixtureTree(t, path)
	cwd := root
	opts := Options{}
	var explain []string
	for _, line := range strings.Split(string(a.Comment), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		arg := func(i int) string {
			if i >= len(fields) {
				t.Fatalf("%s: directive %q needs more arguments", path, line)
			}
			return strings.ReplaceAll(fields[i], "$ROOT", root)
		}
		switch fields[0] {
		case "cwd":
			cwd = filepath.Join(root, arg(1))
			if err := os.MkdirAll(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
		case "trust":
			v, err := strconv.ParseBool(arg(1))
			if err != nil {
				t.Fatal(err)
			}
			opts.TrustFlag = &v
		case "names":
			opts.Names = fields[1:]
		case "explain": // explain profile|role NAME
			explain = []string{arg(1), arg(2)}
		case "rolepack":
			opts.RolePacks = append(opts.RolePacks, arg(1))
		case "bundled":
			opts.BundledRoles = filepath.Join(root, arg(1))
		case "symlink": // symlink LINK TARGET
			link := filepath.Join(root, arg(1))
			os.MkdirAll(filepath.Dir(link), 0o755)
			if err := os.Symlink(arg(2), link); err != nil {
				t.Fatal(err)
			}
		case "fill": // fill PATH BYTES: a file of that many 'x' bytes
			n, err := strconv.Atoi(arg(2))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, arg(1))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, bytes.Repeat([]byte("x"), n), 0o644); err != nil {
				t.Fatal(err)
			}
		case "mkdir": // a directory where a file is expected
			if err := os.MkdirAll(filepath.Join(root, arg(1)), 0o755); err != nil {
				t.Fatal(err)
			}
		case "fifo": // a FIFO: unreadable as a regular file, even for root
			p := filepath.Join(root, arg(1))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		case "bytes": // bytes PATH HEX: raw content such as invalid UTF-8
			var b []byte
			if _, err := fmt.Sscanf(arg(2), "%x", &b); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, arg(1))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: unknown directive %q", path, line)
		}
	}
	env, err := profiles.NewEnv(func(string) string { return filepath.Join(root, "agent") }, filepath.Join(root, "home"), cwd)
	if err != nil {
		t.Fatal(err)
	}
	opts.Env = env
	return &fixture{path: path, archive: a, root: root, opts: opts, explain: explain}
}

// check compares a section against got, or rewrites it under FACETS_UPDATE=1.
func (f *fixture) check(t *testing.T, section, got string) {
	t.Helper()
	golden.Section(t, f.path, f.archive, section, strings.ReplaceAll(got, f.root, "$ROOT"))
}

func (f *fixture) save(t *testing.T) { golden.SaveArchive(t, f.path, f.archive) }

func summarize(m *manifest.Manifest) string {
	var b strings.Builder
	for _, p := range m.Profiles {
		fmt.Fprintf(&b, "%s %s %s %s invokable=%v persistence=%s", p.Name, p.Scope, p.Form, p.SourcePath, p.AgentInvokable, p.Launch.SessionPersistence)
		if p.Launch.Workspace != "" {
			fmt.Fprintf(&b, " workspace=%s", p.Launch.Workspace)
		}
		b.WriteString("\n")
		for _, o := range p.Overrides {
			fmt.Fprintf(&b, "  overrides %s\n", o)
		}
		if p.Launch.Model != "" || p.Launch.ThinkingLevel != "" {
			fmt.Fprintf(&b, "  model=%s thinking=%s\n", p.Launch.Model, p.Launch.ThinkingLevel)
		}
		fmt.Fprintf(&b, "  tools %s\n", strings.Join(p.Launch.Tools, ","))
		for _, s := range p.Launch.Skills {
			fmt.Fprintf(&b, "  skill %s\n", s)
		}
		if p.Launch.Instructions != "" {
			fmt.Fprintf(&b, "  instructions from %s: %q\n", p.Launch.InstructionsSource, firstLine(p.Launch.Instructions))
		}
	}
	for _, r := range m.Roles {
		fmt.Fprintf(&b, "role %s %s %s", r.Name, r.Layer, r.Path)
		if r.Provider != "" {
			fmt.Fprintf(&b, " provider=%s@%s", r.Provider, r.ProviderVersion)
		}
		b.WriteString("\n")
	}
	for _, s := range m.Main {
		fmt.Fprintf(&b, "main %s %s: %q\n", s.Scope, s.Path, firstLine(s.Content))
	}
	fmt.Fprintf(&b, "trust %v (%s)\n", m.Trust.Trusted, m.Trust.Reason)
	return b.String()
}

func firstLine(s string) string {
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = s[:i], true
	}
	if r := []rune(s); len(r) > 60 {
		s, cut = string(r[:60]), true
	}
	if cut {
		s += "…"
	}
	return s
}

// TestCompileFixtures runs every testdata/compile/*.txtar case: one per
// discovery, validation and resolution rule, including each error case.
func TestCompileFixtures(t *testing.T) {
	schema := loadSchema(t)
	paths, err := filepath.Glob("../testdata/compile/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			f := loadFixture(t, path)
			m, ds, err := Compile(schema, f.opts)
			if err != nil {
				t.Fatal(err)
			}
			// Whatever the input, the manifest must satisfy #Manifest.
			b, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if res := schema.ValidateJSON(cue.Manifest, "manifest.json", b); !res.OK() {
				t.Errorf("manifest violates #Manifest: %+v", res.Findings)
			}
			var diag bytes.Buffer
			if err := WriteDiagnostics(&diag, FormatText, f.root, ds); err != nil {
				t.Fatal(err)
			}
			f.check(t, "want/diagnostics", diag.String())
			f.check(t, "want/profiles", summarize(m))
			f.save(t)
		})
	}
}

func TestSplitRolePacks(t *testing.T) {
	for in, want := range map[string][]string{
		"":                 nil,
		"/a":               {"/a"},
		"/a:/b/c.md":       {"/a", "/b/c.md"},
		":/a:: :/b:":       {"/a", "/b"},
		"relative:/abs.md": {"relative", "/abs.md"}, // kept: the compiler reports relative paths
	} {
		got := SplitRolePacks(in)
		if len(got) != len(want) {
			t.Errorf("SplitRolePacks(%q) = %q, want %q", in, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("SplitRolePacks(%q) = %q, want %q", in, got, want)
			}
		}
	}
}

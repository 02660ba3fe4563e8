package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/benchtree"
	"github.com/facets-dev/facets/profiles"
)

// writeBenchTree generates n profiles and n roles (see benchtree.Write).
// FACETS_BENCH_TREE keeps the tree at that path for comparing with
// `cue vet`.
func writeBenchTree(tb testing.TB, n int) string {
	tb.Helper()
	root := os.Getenv("FACETS_BENCH_TREE")
	if root == "" {
		root = tb.TempDir()
	}
	if err := benchtree.Write(root, n); err != nil {
		tb.Fatal(err)
	}
	// Flush the new files now: otherwise the kernel writes them back
	// during the timed runs, and the larger the tree, the more that
	// competes with the run, which skews the 10k/1k ratio.
	syscall.Sync()
	return root
}

// treeEnv is the Env of a generated tree: agent dir root/agent, run from
// root with home as the home directory.
func treeEnv(tb testing.TB, root, home string) profiles.Env {
	tb.Helper()
	env, err := profiles.NewEnv(func(string) string { return filepath.Join(root, "agent") }, home, root)
	if err != nil {
		tb.Fatal(err)
	}
	return env
}

// coldCompile loads the schema and compiles, as one facets run does.
func coldCompile(tb testing.TB, opts Options) (*manifest.Manifest, []Diagnostic) {
	tb.Helper()
	schema := loadSchema(tb)
	m, ds, err := Compile(schema, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return m, ds
}

// BenchmarkCheck measures what facets check does (a compile without
// encoding) over n generated profiles and n roles, cold: a fresh schema
// every iteration, as in a new process.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			root := writeBenchTree(b, n)
			env := treeEnv(b, root, filepath.Join(root, "home"))
			b.ResetTimer()
			for b.Loop() {
				m, ds := coldCompile(b, Options{Env: env, NoDigests: true})
				if len(m.Profiles) != n || len(m.Roles) != n || HasErrors(ds) {
					b.Fatalf("got %d profiles, %d roles, diagnostics %v", len(m.Profiles), len(m.Roles), ds)
				}
			}
		})
	}
}

// BenchmarkCompile1000 measures a full compile (which is also what check
// does) of 1,000 profiles and 1,000 roles, including discovery, schema
// validation, skill resolution and manifest encoding.
func BenchmarkCompile1000(b *testing.B) {
	root := writeBenchTree(b, 1000)
	schema := loadSchema(b)
	env := treeEnv(b, root, filepath.Join(root, "home"))
	b.ResetTimer()
	for b.Loop() {
		m, ds, err := Compile(schema, Options{Env: env})
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Profiles) != 1000 || len(m.Roles) != 1000 || HasErrors(ds) {
			b.Fatalf("got %d profiles, %d roles, diagnostics %v", len(m.Profiles), len(m.Roles), ds)
		}
		if _, err := m.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartupSnapshot measures what a Main started with
// FACETS_MANIFEST pays to read a current 1,000 + 1,000 snapshot and check
// it against its sources: "decoded" is OpenSnapshot (byte-identical to a
// fresh compile, so no #Manifest evaluation), "schema-checked" the same
// snapshot through ParseManifest and Verify, as every start did before.
func BenchmarkStartupSnapshot(b *testing.B) {
	root := writeBenchTree(b, 1000)
	env := treeEnv(b, root, filepath.Join(root, "home"))
	m, _ := coldCompile(b, Options{Env: env})
	data, err := m.Encode()
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Env: env}
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			if _, ds, err := OpenSnapshot(loadSchema(b), "m.json", data, opts); err != nil || len(ds) != 0 {
				b.Fatalf("OpenSnapshot: %v, %v", ds, err)
			}
		}
	})
	b.Run("schema-checked", func(b *testing.B) {
		for b.Loop() {
			schema := loadSchema(b)
			frozen, err := ParseManifest(schema, "m.json", data)
			if err != nil {
				b.Fatal(err)
			}
			fresh, err := compileLike(schema, frozen, "m.json", opts)
			if err != nil {
				b.Fatal(err)
			}
			if ds := compareSnapshot(frozen, fresh, "m.json"); len(ds) != 0 {
				b.Fatalf("compareSnapshot: %v", ds)
			}
		}
	})
}

// BenchmarkSchemaLoad measures compiling the embedded CUE schema, paid once
// per facets invocation.
func BenchmarkSchemaLoad(b *testing.B) {
	for b.Loop() {
		if _, err := cue.Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParallelValidationMatchesSequential compiles a tree large enough for
// several workers, with invalid profiles and roles spread through it, and checks the
// manifest is byte-identical to a one-worker compile. Run it with -race.
func TestParallelValidationMatchesSequential(t *testing.T) {
	root := t.TempDir()
	for i := range 300 {
		name := fmt.Sprintf("p%03d", i)
		doc := fmt.Sprintf(`{"version": 1, "name": %q, "tools": ["read"]}`, name)
		switch i % 7 {
		case 3:
			doc = fmt.Sprintf(`{"version": 1, "name": %q, "tools": []}`, name)
		case 5:
			doc = fmt.Sprintf(`{"version": 1, "name": %q, "tols": ["read"]}`, name)
		}
		p := filepath.Join(root, "agent", "facets", "profiles", name, "config.json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		role := fmt.Sprintf("---\ndescription: role %d\ntools: read, bash\n---\nBody.\n", i)
		if i%11 == 4 {
			role = fmt.Sprintf("---\ndescription: role %d\nspawning: extreme\n---\nBody.\n", i)
		}
		r := filepath.Join(root, "agent", "agents", fmt.Sprintf("r%03d.md", i))
		os.MkdirAll(filepath.Dir(r), 0o755)
		if err := os.WriteFile(r, []byte(role), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := treeEnv(t, root, root)
	encode := func(workers int) []byte {
		m, _ := coldCompile(t, Options{Env: env, Workers: workers})
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	seq, par := encode(1), encode(4)
	if string(seq) != string(par) {
		t.Fatalf("parallel compile differs from sequential:\n%s\n---\n%s", seq, par)
	}
	// 43 empty tool lists (one error each), 43 misspelled keys (unknown
	// field plus missing tools) and 27 roles with a bad thinking level.
	if n := strings.Count(string(seq), `"severity": "error"`); n != 43+43*2+27 {
		t.Errorf("got %d error diagnostics, want %d", n, 43+43*2+27)
	}
	if n := strings.Count(string(seq), `"layer": "global"`); n != 300-27 {
		t.Errorf("got %d roles, want %d", n, 300-27)
	}
}

// TestNoDigestsReportsTheSame checks that check's shortcut changes
// only the manifest's source digests: same diagnostics, same profiles,
// and no skill file read.
func TestNoDigestsReportsTheSame(t *testing.T) {
	root := writeBenchTree(t, 3)
	bad := filepath.Join(root, "agent", "facets", "profiles", "broken", "config.json")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := `{"version": 1, "name": "broken", "tools": ["read"], "skills": ["nowhere"], "model": "nomodel"}`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := treeEnv(t, root, filepath.Join(root, "home"))
	run := func(only bool) (*manifest.Manifest, []Diagnostic) {
		return coldCompile(t, Options{Env: env, NoDigests: only})
	}
	full, fullDs := run(false)
	short, shortDs := run(true)
	if diff := cmp.Diff(fullDs, shortDs); diff != "" {
		t.Errorf("diagnostics differ (-compile +check):\n%s", diff)
	}
	if len(fullDs) < 2 || len(full.Profiles) != 3 || len(short.Profiles) != 3 {
		t.Fatalf("fixture lost its point: %d diagnostics, %d/%d profiles", len(fullDs), len(full.Profiles), len(short.Profiles))
	}
	skill := full.Profiles[0].Launch.Skills[0]
	has := func(m *manifest.Manifest) bool {
		return slices.ContainsFunc(m.Sources, func(s manifest.Source) bool { return s.Path == skill })
	}
	if !has(full) || has(short) {
		t.Errorf("skill digest in sources: compile %v, check %v; want true, false", has(full), has(short))
	}
	// check hashes nothing: no sources, no profile or role digests.
	if len(short.Sources) != 0 || len(full.Sources) == 0 {
		t.Errorf("sources: compile %d, check %d; want some, none", len(full.Sources), len(short.Sources))
	}
	if len(short.Roles) == 0 || len(short.Roles) != len(full.Roles) {
		t.Fatalf("roles: compile %d, check %d; want the same, more than none", len(full.Roles), len(short.Roles))
	}
	for i := range short.Profiles {
		if short.Profiles[i].SourceSHA256 != "" || short.Profiles[i].Launch.InstructionsSHA256 != "" || full.Profiles[i].SourceSHA256 == "" {
			t.Errorf("profile %s digests: compile %q, check %q/%q", full.Profiles[i].Name, full.Profiles[i].SourceSHA256,
				short.Profiles[i].SourceSHA256, short.Profiles[i].Launch.InstructionsSHA256)
		}
	}
	for i := range short.Roles {
		if short.Roles[i].SHA256 != "" || full.Roles[i].SHA256 != manifest.Digest(mustRead(t, full.Roles[i].Path)) {
			t.Errorf("role %s digest: compile %q, check %q", full.Roles[i].Name, full.Roles[i].SHA256, short.Roles[i].SHA256)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// manyKeysRole is a role file with n unknown frontmatter keys, each a
// warning: 20k keys make about 190 KB, under the 256 KiB role file cap.
func manyKeysRole(n int) profiles.RoleFile {
	var b strings.Builder
	b.WriteString("---\nname: wide\ndescription: many keys\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "unknown-key-%d: v\n", i)
	}
	b.WriteString("---\nprompt\n")
	return profiles.RoleFile{Layer: profiles.LayerGlobal, Path: "/agent/agents/wide.md", Stem: "wide", Data: []byte(b.String())}
}

// BenchmarkRoleManyKeys parses role files with 2k to 20k unknown keys;
// ns/op grows linearly with the key count (compare the sizes' ratios).
func BenchmarkRoleManyKeys(b *testing.B) {
	schema := loadSchema(b)
	for _, n := range []int{2000, 5000, 10000, 20000} {
		f := manyKeysRole(n)
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(f.Data)))
			for i := 0; i < b.N; i++ {
				p := roleParser{schema: schema}
				if _, diags := p.parse(&f); len(diags) != n {
					b.Fatalf("%d diagnostics, want %d", len(diags), n)
				}
			}
		})
	}
}

// BenchmarkFrozenManifestLaunch measures what each delegate or invoke with
// --manifest pays before it launches (every launch is its own facets
// process): loading the schema ("schema"), then checking a frozen manifest
// of n profiles and n roles against #Manifest and decoding it
// ("read/n=..."), or, for a manifest an earlier launch checked, reading
// and decoding it only ("checked-before/n=...").
func BenchmarkFrozenManifestLaunch(b *testing.B) {
	b.Run("schema", func(b *testing.B) {
		for b.Loop() {
			loadSchema(b)
		}
	})
	for _, n := range []int{10, 1000} {
		root := writeBenchTree(b, n)
		m, _ := coldCompile(b, Options{Env: treeEnv(b, root, filepath.Join(root, "home"))})
		data, err := m.Encode()
		if err != nil {
			b.Fatal(err)
		}
		schema := loadSchema(b)
		b.Run(fmt.Sprintf("read/n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseManifest(schema, "m.json", data); err != nil {
					b.Fatal(err)
				}
			}
		})
		// A later launch of the same manifest: CheckedManifests finds its
		// check on record and only decodes it.
		path := filepath.Join(b.TempDir(), "m.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
		checked := CheckedManifests{Dir: b.TempDir()}
		if _, err := checked.Load(path); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("checked-before/n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := checked.Load(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

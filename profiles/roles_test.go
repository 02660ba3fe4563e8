package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/facets-dev/facets/internal/diag"
	"github.com/google/go-cmp/cmp"
)

func TestSplitFrontmatter(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		wantYAML string
		wantBody string
		wantOK   bool
	}{
		{"basic", "---\nname: a\n---\nBody\n", "name: a", "Body", true},
		{"body trimmed", "---\na: b\n---\n\n\n  Body text  \n\n", "a: b", "Body text", true},
		{"empty block needs a blank line", "---\n\n---\nB", "", "B", true},
		{"adjacent markers do not close", "---\n---\nB", "", "", false},
		{"closes at first later marker", "---\na: 1\n---\nx\n---\ny", "a: 1", "x\n---\ny", true},
		{"four dashes close", "---\na: 1\n----\nB", "a: 1", "-\nB", true},
		{"marker with text closes", "---\na: 1\n---x\nB", "a: 1", "x\nB", true},
		{"no body", "---\na: 1\n---", "a: 1", "", true},
		{"unterminated", "---\na: 1\n", "", "", false},
		{"leading blank line", "\n---\na: 1\n---\n", "", "", false},
		{"crlf opener", "---\r\na: 1\r\n---\r\n", "", "", false},
		{"bom", "\uFEFF---\na: 1\n---\n", "", "", false},
		{"no frontmatter", "# Title\n", "", "", false},
		{"empty file", "", "", "", false},
		{"opener only", "---\n", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml, start, body, ok := SplitFrontmatter([]byte(tt.src))
			if ok != tt.wantOK || string(yaml) != tt.wantYAML || body != tt.wantBody {
				t.Errorf("SplitFrontmatter(%q) = %q, %q, %v; want %q, %q, %v", tt.src, yaml, body, ok, tt.wantYAML, tt.wantBody, tt.wantOK)
			}
			if ok && start != 2 {
				t.Errorf("start line = %d, want 2", start)
			}
		})
	}
}

func TestFrontmatterLine(t *testing.T) {
	yaml := []byte("name: a\n  tools: indented\ntools:  read, bash  \nskills: x\nskill: y\nempty:\nq: \"quoted\" # c\ntools: second")
	tests := []struct {
		key      string
		want     string
		wantLine int
		wantOK   bool
	}{
		{"name", "a", 1, true},
		{"tools", "read, bash", 3, true}, // first column-0 line; indented ones never match
		{"skill", "y", 5, true},          // "skills:" does not start with "skill:"
		{"empty", "", 6, false},          // an empty value counts as absent
		{"q", "\"quoted\" # c", 7, true}, // quotes and comments are kept
		{"missing", "", 0, false},
	}
	for _, tt := range tests {
		v, line, ok := FrontmatterLine(yaml, tt.key)
		if v != tt.want || line != tt.wantLine || ok != tt.wantOK {
			t.Errorf("FrontmatterLine(%q) = %q, %d, %v; want %q, %d, %v", tt.key, v, line, ok, tt.want, tt.wantLine, tt.wantOK)
		}
	}
}

func TestKeyLines(t *testing.T) {
	yaml := []byte("tools: a\n  tools: b\ntools : c\ntoolsy: d\n\ttools:e\n# tools: f")
	if diff := cmp.Diff([]int{1, 2, 3, 5}, KeyLines(yaml, "tools")); diff != "" {
		t.Errorf("KeyLines mismatch (-want +got):\n%s", diff)
	}
}

// writeRoleTree creates files under root; a name ending in "/" makes a directory.
func writeRoleTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type roleFileSummary struct {
	Layer, Rel, Stem, Provider, Version string
	Read                                bool
}

func summarizeRoles(root string, r Roles) []roleFileSummary {
	var out []roleFileSummary
	for _, f := range r.Files {
		rel, _ := filepath.Rel(root, f.Path)
		out = append(out, roleFileSummary{f.Layer, filepath.ToSlash(rel), f.Stem, f.Provider, f.ProviderVersion, f.Data != nil})
	}
	return out
}

func roleProblemCodes(ps []diag.Diagnostic) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

// TestDiscoverRolesLayers checks collection order (bundled, packs in
// registration order, global, project), direct-children-only listing,
// case-sensitive .md matching, and the trust gate.
func TestDiscoverRolesLayers(t *testing.T) {
	root := t.TempDir()
	writeRoleTree(t, root, map[string]string{
		"host/agents/b.md":            "x",
		"host/agents/a.md":            "x",
		"host/agents/nested/deep.md":  "x",
		"host/agents/UPPER.MD":        "x",
		"host/agents/.hidden.md":      "x",
		"pack2/package.json":          `{"name":"two","version":"2.0.0"}`,
		"pack2/r.md":                  "x",
		"pack1/roles/z.md":            "x",
		"agent/agents/g.md":           "x",
		"project/.pi/agents/p.md":     "x",
		"project/.pi/agents/sub/q.md": "x",
	})
	src := RoleSources{
		BundledDir: filepath.Join(root, "host/agents"),
		Packs:      []string{filepath.Join(root, "pack2"), filepath.Join(root, "pack1/roles")},
		AgentDir:   filepath.Join(root, "agent"),
		Cwd:        filepath.Join(root, "project"),
		Trusted:    true,
	}
	got, probs := DiscoverRoles(src)
	if len(probs) != 0 {
		t.Fatalf("unexpected problems: %v", probs)
	}
	want := []roleFileSummary{
		{LayerBundled, "host/agents/.hidden.md", ".hidden", "", "", true},
		{LayerBundled, "host/agents/a.md", "a", "", "", true},
		{LayerBundled, "host/agents/b.md", "b", "", "", true},
		{LayerPackage, "pack2/r.md", "r", "two", "2.0.0", true},
		{LayerPackage, "pack1/roles/z.md", "z", "", "", true},
		{LayerGlobal, "agent/agents/g.md", "g", "", "", true},
		{LayerProject, "project/.pi/agents/p.md", "p", "", "", true},
	}
	if diff := cmp.Diff(want, summarizeRoles(root, got)); diff != "" {
		t.Errorf("trusted discovery mismatch (-want +got):\n%s", diff)
	}
	if len(got.Packages) != 1 || got.Packages[0].Path != filepath.Join(root, "pack2/package.json") {
		t.Errorf("packages read = %v, want only pack2/package.json", got.Packages)
	}

	src.Trusted = false
	got, _ = DiscoverRoles(src)
	for _, f := range got.Files {
		if f.Layer == LayerProject {
			t.Errorf("untrusted project contributed %s", f.Path)
		}
	}
}

// TestDiscoverRolesProblems covers bad registrations and unreadable files.
// Tests run as root, so permission bits cannot make a file unreadable;
// a directory named like a role file and a FIFO are used instead.
func TestDiscoverRolesProblems(t *testing.T) {
	root := t.TempDir()
	writeRoleTree(t, root, map[string]string{
		"pack/ok.md":     "x",
		"pack/dir.md/":   "",
		"pack/notes.txt": "x",
		"agent/agents/":  "",
	})
	if err := syscall.Mkfifo(filepath.Join(root, "pack/fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop.md", filepath.Join(root, "pack/loop.md")); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, MaxRoleFileBytes+1)
	if err := os.WriteFile(filepath.Join(root, "agent/agents/big.md"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	exact := make([]byte, MaxRoleFileBytes)
	if err := os.WriteFile(filepath.Join(root, "agent/agents/exact.md"), exact, 0o644); err != nil {
		t.Fatal(err)
	}
	src := RoleSources{
		Packs: []string{"rel/pack", filepath.Join(root, "nope"), filepath.Join(root, "pack/notes.txt"),
			filepath.Join(root, "pack"), filepath.Join(root, "pack") + "/", filepath.Join(root, "pack/ok.md")},
		AgentDir: filepath.Join(root, "agent"),
	}
	done := make(chan struct{})
	var got Roles
	var probs []diag.Diagnostic
	go func() {
		got, probs = DiscoverRoles(src)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("DiscoverRoles hung (FIFO opened?)")
	}
	wantCodes := []string{"invalid-role-pack-path", "missing-role-pack-path", "invalid-role-pack-file",
		"unreadable-role-definition", "unreadable-role-definition", "unreadable-role-definition", "oversized-role-definition"}
	if diff := cmp.Diff(wantCodes, roleProblemCodes(probs)); diff != "" {
		t.Errorf("problem codes mismatch (-want +got):\n%s\n%v", diff, probs)
	}
	for _, p := range probs {
		if p.Message == "" || p.Hint == "" {
			t.Errorf("problem %s lacks message or hint: %+v", p.Code, p)
		}
		if p.Severity != diag.Error {
			t.Errorf("problem %s has severity %s, want error: each loses a role", p.Code, p.Severity)
		}
	}
	want := []roleFileSummary{
		{LayerPackage, "pack/dir.md", "dir", "", "", false},
		{LayerPackage, "pack/fifo.md", "fifo", "", "", false},
		{LayerPackage, "pack/loop.md", "loop", "", "", false},
		{LayerPackage, "pack/ok.md", "ok", "", "", true},
		{LayerGlobal, "agent/agents/big.md", "big", "", "", false},
		{LayerGlobal, "agent/agents/exact.md", "exact", "", "", true},
	}
	if diff := cmp.Diff(want, summarizeRoles(root, got)); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
}

// TestReadRoleFileSizeCheckedFirst checks that an oversized role file is
// refused from its size alone: a 1 GiB sparse file is reported with its
// full size, which reading at most the limit could not know.
func TestReadRoleFileSizeCheckedFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.md")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, p := readRoleFile(nil, path)
	if data != nil || p == nil || p.Code != "oversized-role-definition" || !strings.Contains(p.Message, "1073741824 bytes") {
		t.Errorf("readRoleFile = %d bytes, %+v; want an oversized-role-definition problem naming 1073741824 bytes", len(data), p)
	}
}

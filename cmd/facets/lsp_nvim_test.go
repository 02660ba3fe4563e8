package main

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/facets-dev/facets/compiler"
)

// nvimDiagnostic is one diagnostic as Neovim holds it: 0-based line and
// byte column (Neovim converts the server's UTF-16 columns back), its
// severity (1 error, 2 warning, 3 info), the message (with the hint) and
// the files of the related locations.
type nvimDiagnostic struct {
	Lnum     int      `json:"lnum"`
	Col      int      `json:"col"`
	Severity int      `json:"severity"`
	Code     string   `json:"code"`
	Source   string   `json:"source"`
	Message  string   `json:"message"`
	Related  []string `json:"related"`
}

type nvimResult struct {
	Files []struct {
		File        string           `json:"file"`
		Buffer      *string          `json:"buffer"`
		Diagnostics []nvimDiagnostic `json:"diagnostics"`
	} `json:"files"`
	Errors []string `json:"errors"`
	Exit   *int     `json:"exit"`
}

// TestNeovimDiagnostics drives facets lsp from a real editor: Neovim
// (Debian's 0.7.2, which CI installs) opens broken config.json files, a
// legacy profile, a role file and MAIN.md, edits one buffer without saving
// it, and writes the diagnostics it received; they must equal what
// `facets check --format json` reports on the same tree, with the edited
// buffer saved. The cases include three that JSON Schema cannot express:
// the name/directory rule, duplicate keys and the 65,536 UTF-16-unit limit,
// and lines with multi-byte and astral characters before the error, so
// the UTF-16 columns are checked too.
func TestNeovimDiagnostics(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		t.Fatalf("nvim is not installed; this test needs Neovim >= 0.7 (apt-get install -y neovim, as .ci/run does): %v", err)
	}
	root := t.TempDir()
	agent := filepath.Join(root, "agent")
	proj := filepath.Join(root, "proj")
	files := map[string]string{
		// name/directory rule, and an error after astral characters.
		"agent/facets/profiles/alpha/config.json": `{"version": 1, "name": "beta", "description": "Ünïcode ✓ 😀", "tools": ["read"], "invocation": "sometimes"}` + "\n",
		// Duplicate keys.
		"agent/facets/profiles/dup/config.json": "{\n  \"version\": 1,\n  \"name\": \"dup\",\n  \"tools\": [\"read\"],\n  \"tools\": [\"bash\"]\n}\n",
		// 32,769 astral characters: within 65,536 characters, over
		// 65,536 UTF-16 units.
		"agent/facets/profiles/big.json": `{"version": 1, "name": "big", "tools": ["read"], "instructions": "` + strings.Repeat("😀", 32769) + `"}` + "\n",
		// A profile in both forms: check names its directory.
		"agent/facets/profiles/twin/config.json": `{"version": 1, "name": "twin", "tools": ["read"]}` + "\n",
		"agent/facets/profiles/twin.json":        `{"version": 1, "name": "twin", "tools": ["read"]}` + "\n",
		// A JSON syntax error after multi-byte characters.
		"agent/facets/profiles/syn.json": `{"version": 1, "name": "syn", "description": "é😀" "tools": ["read"]}` + "\n",
		"agent/agents/reviewer.md":       "---\nname: reviewer\ndescription: Reviews — “carefully” 😀\nmodel: anthropic/claude\nmodel: openai/gpt\nthinking: extreme\n---\nBody.\n",
		"agent/agents/writer.md":         "---\ndescription: Writes\n---\nWrite.\n",
		"agent/facets/MAIN.md":           "\n\n",
		// A nearer project profile; the global alpha is broken too.
		"proj/.pi/facets/profiles/alpha/config.json": `{"version": 1, "name": "alpha", "tools": []}` + "\n",
		"proj/.pi/facets/MAIN.md":                    "Route reviews to alpha.\n",
		// Masking: a valid nearer gamma masks a broken global one; a
		// broken nearer delta hides a valid global one.
		"agent/facets/profiles/gamma/config.json":    `{"version": 1, "name": "gamma"}` + "\n",
		"proj/.pi/facets/profiles/gamma/config.json": `{"version": 1, "name": "gamma", "tools": ["read"]}` + "\n",
		"agent/facets/profiles/delta/config.json":    `{"version": 1, "name": "delta", "tools": ["read"]}` + "\n",
		"proj/.pi/facets/profiles/delta/config.json": `{"version": 1, "name": "delta", "tools": ["read"], "model": 7}` + "\n",
	}
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "home"), 0o755)
	var open []string
	for rel := range files {
		open = append(open, filepath.Join(root, rel))
	}
	slices.Sort(open)
	// writer.md is valid on disk; the unsaved buffer is not.
	edits := map[string][]string{filepath.Join(agent, "agents/writer.md"): {"---", "description: Writes", "spawning: sometimes", "---", "Write."}}

	// The test binary is facets when run under that name (TestMain).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "facets")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--trust", "--agent-dir", agent}
	out := filepath.Join(root, "nvim-result.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-n", "-i", "NONE", "-u", "testdata/lsp-nvim.lua")
	cmd.Dir = proj
	cmd.Env = []string{
		"HOME=" + filepath.Join(root, "home"), "PATH=" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "xdg/config"), "XDG_DATA_HOME=" + filepath.Join(root, "xdg/data"),
		"XDG_STATE_HOME=" + filepath.Join(root, "xdg/state"), "XDG_CACHE_HOME=" + filepath.Join(root, "xdg/cache"),
		"FACETS_BIN=" + bin, "FACETS_ARGS=" + mustJSON(t, append([]string{"lsp"}, flags...)),
		"FACETS_ROOT=" + proj, "FACETS_FILES=" + mustJSON(t, open), "FACETS_EDITS=" + mustJSON(t, edits), "FACETS_OUT=" + out,
	}
	if abs, err := filepath.Abs("testdata/lsp-nvim.lua"); err == nil {
		cmd.Args[len(cmd.Args)-1] = abs
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("nvim wrote no result: %v", err)
	}
	var res nvimResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("nvim result: %v\n%s", err, raw)
	}
	if len(res.Errors) > 0 {
		t.Errorf("in Neovim: %s", strings.Join(res.Errors, "\n"))
	}
	if res.Exit == nil || *res.Exit != 0 {
		t.Errorf("facets lsp exit status after shutdown and exit: %v, want 0", res.Exit)
	}
	if len(res.Files) != len(open) {
		t.Fatalf("nvim reported %d files, want %d", len(res.Files), len(open))
	}

	// check on the same tree, with the edited buffer saved.
	for _, f := range res.Files {
		if f.Buffer != nil {
			if err := os.WriteFile(f.File, []byte(*f.Buffer), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, stdout, stderr := runApp(t, map[string]string{"HOME": filepath.Join(root, "home")}, "",
		append([]string{"check", "--format", "json", "-C", proj}, flags...)...)
	if code != exitDiagnostics {
		t.Fatalf("check: exit %d, stderr %s", code, stderr)
	}
	var checked []compiler.Diagnostic
	if err := json.Unmarshal([]byte(stdout), &checked); err != nil {
		t.Fatal(err)
	}
	want := map[string][]nvimDiagnostic{}
	for _, d := range checked {
		file := d.File
		if !filepath.IsAbs(file) {
			file = filepath.Join(proj, file)
		}
		msg := d.Message
		if d.Hint != "" {
			msg += "\nhint: " + d.Hint
		}
		related := []string{}
		for _, r := range d.Related {
			related = append(related, r.File)
		}
		nd := nvimDiagnostic{Lnum: max(d.Line-1, 0), Col: max(d.Column-1, 0),
			Severity: map[compiler.Severity]int{compiler.Error: 1, compiler.Warning: 2, compiler.Info: 3}[d.Severity],
			Code:     d.Code, Source: "facets", Message: msg, Related: related}
		// A finding about a directory shows in the open files in it.
		if fi, err := os.Stat(file); err == nil && fi.IsDir() {
			for _, f := range open {
				if strings.HasPrefix(f, file+string(filepath.Separator)) {
					want[f] = append(want[f], nd)
				}
			}
			continue
		}
		want[file] = append(want[file], nd)
	}
	order := func(a, b nvimDiagnostic) int {
		return cmp.Or(a.Lnum-b.Lnum, a.Col-b.Col, strings.Compare(a.Code, b.Code), strings.Compare(a.Message, b.Message))
	}
	seen := map[string][]string{}
	relatedSeen := 0
	for _, f := range res.Files {
		got := f.Diagnostics
		slices.SortFunc(got, order)
		w := want[f.File]
		slices.SortFunc(w, order)
		if diff := gocmp.Diff(w, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: Neovim's diagnostics differ from check's (-check +nvim):\n%s", f.File, diff)
		}
		for _, d := range got {
			rel, _ := filepath.Rel(root, f.File)
			seen[rel] = append(seen[rel], d.Code)
			relatedSeen += len(d.Related)
		}
	}
	// The cases JSON Schema cannot express, the other file kinds, and the
	// unsaved buffer's finding reached the editor.
	for file, code := range map[string]string{
		"agent/facets/profiles/alpha/config.json":    "name-mismatch",
		"agent/facets/profiles/dup/config.json":      "duplicate-key",
		"agent/facets/profiles/big.json":             "oversized-instructions",
		"agent/agents/reviewer.md":                   "duplicate-key",
		"agent/agents/writer.md":                     "invalid-value",
		"agent/facets/MAIN.md":                       "empty-main",
		"agent/facets/profiles/gamma/config.json":    "missing-field",
		"proj/.pi/facets/profiles/delta/config.json": "masked-profile",
	} {
		if !slices.Contains(seen[file], code) {
			t.Errorf("%s: no %s diagnostic reached Neovim; got %v", file, code, seen[file])
		}
	}
	if relatedSeen < 2 {
		t.Errorf("%d related locations reached Neovim, want the masked and the masking definitions'", relatedSeen)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

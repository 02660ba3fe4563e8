package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"

	"cuelang.org/go/cue/cuecontext"
	cueyaml "cuelang.org/go/encoding/yaml"
)

// hook is one entry of .pre-commit-hooks.yaml, as pre-commit reads it.
type hook struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Entry         string `json:"entry"`
	Language      string `json:"language"`
	LangVersion   string `json:"language_version"`
	PassFilenames *bool  `json:"pass_filenames"`
	Files         string `json:"files"`
	AlwaysRun     bool   `json:"always_run"`
}

// TestPreCommitHook parses the repository's .pre-commit-hooks.yaml and runs
// the facets-check entry the way pre-commit would (from the repository
// root, with no file names) against a clean and a broken fixture, with a
// broken profile in the agent dir that the hook must ignore, and checks
// that it runs on every commit. The real
// pre-commit runs the hook in TestPreCommitRecipe.
func TestPreCommitHook(t *testing.T) {
	data, err := os.ReadFile("../../.pre-commit-hooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := cueyaml.Extract(".pre-commit-hooks.yaml", data)
	if err != nil {
		t.Fatalf("parse .pre-commit-hooks.yaml: %v", err)
	}
	v := cuecontext.New().BuildFile(f)
	var hooks []hook
	if err := v.Decode(&hooks); err != nil {
		t.Fatalf("decode .pre-commit-hooks.yaml: %v", err)
	}
	var h *hook
	for i := range hooks {
		if hooks[i].ID == "facets-check" {
			h = &hooks[i]
		}
	}
	if h == nil {
		t.Fatalf("no facets-check hook in %+v", hooks)
	}
	if h.Language != "golang" || h.LangVersion != "system" || h.Name == "" {
		t.Errorf("hook %+v: want language golang, language_version system (the Go on PATH) and a name", h)
	}
	// pre-commit's golang language installs the module's commands; the
	// entry's program must be one of them.
	argv := strings.Fields(h.Entry)
	if len(argv) < 2 || argv[0] != "facets" || argv[1] != "check" {
		t.Fatalf("entry %q: want facets check …", h.Entry)
	}
	if _, err := os.Stat("../../cmd/" + argv[0] + "/main.go"); err != nil {
		t.Errorf("entry program %s is not a command of this module: %v", argv[0], err)
	}
	if h.PassFilenames == nil || *h.PassFilenames {
		t.Error("pass_filenames must be false: facets check takes profile names, not files")
	}
	// pre-commit passes a files: filter no deleted file, so a commit that
	// deletes a profile or a skill would skip the hook
	// (TestPreCommitRecipe commits both).
	if !h.AlwaysRun || h.Files != "" {
		t.Errorf("always_run %v, files %q: want always_run: true and no files filter, or a commit that only deletes skips the hook", h.AlwaysRun, h.Files)
	}

	for _, tc := range []struct {
		name, config string
		want         int
	}{
		{"clean", `{"version":1,"name":"p","tools":["read"]}`, exitOK},
		{"error", `{"version":1,"name":"p","tols":["read"]}`, exitDiagnostics},
		{"warning is strict", `{"version":1,"name":"p","tools":["read"],"model":"nomodel"}`, exitDiagnostics},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			// The committer's own agent dir holds a broken profile, which
			// a repository's hook must not judge.
			agent := t.TempDir()
			mine := filepath.Join(agent, "facets", "profiles", "mine", "config.json")
			os.MkdirAll(filepath.Dir(mine), 0o755)
			if err := os.WriteFile(mine, []byte(`{"version":1,"name":"mine"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{envvar.AgentDir: agent}
			p := filepath.Join(repo, ".pi", "facets", "profiles", "p", "config.json")
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(repo)
			code, out, errOut := runApp(t, env, "", argv[1:]...)
			if code != tc.want {
				t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", h.Entry, code, tc.want, out, errOut)
			}
		})
	}
}

package profiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/facets-dev/facets/internal/diag"
)

func TestNearName(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		near      bool
	}{
		{"profile", "profiles", true},
		{"Profiles", "profiles", true},
		{"profles", "profiles", true},
		{"prafiles", "profiles", true},
		{"profiles", "profiles", false},
		{"agent", "agents", true},
		{"AGENTS", "agents", true},
		{"agents.md", "agents", false},
		{"main.md", "MAIN.md", true},
		{"skills", "agents", false},
		{"facet", "facets", true},
		{"sessions", "facets", false},
		{"pro", "profiles", false},
	} {
		if got := nearName(tc.got, tc.want); got != tc.near {
			t.Errorf("nearName(%q, %q) = %v, want %v", tc.got, tc.want, got, tc.near)
		}
	}
}

func TestLayoutProblems(t *testing.T) {
	root := t.TempDir()
	agent := filepath.Join(root, "home", ".pi", "agent")
	cwd := filepath.Join(root, "home")
	for _, d := range []string{
		filepath.Join(agent, "facets", "profile"), // near profiles/
		filepath.Join(agent, "agent"),             // near agents/
		filepath.Join(cwd, ".pi", "facets", "Profiles"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := Env{AgentDir: agent, Cwd: cwd}
	got := map[string]bool{}
	for _, p := range LayoutProblems(env, true) {
		got[p.File] = true
		if p.Severity != diag.Warning {
			t.Errorf("%s: severity %s, want warning: a misnamed path never stops the compile", p.File, p.Severity)
		}
	}
	want := map[string]bool{
		filepath.Join(agent, "facets", "profile"):       true,
		filepath.Join(agent, "agent"):                   true,
		filepath.Join(cwd, ".pi", "facets", "Profiles"): true,
	}
	// ~/.pi/agent is the agent dir itself, not a misspelt project agents/.
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for p := range want {
		if !got[p] {
			t.Errorf("missing %s in %v", p, got)
		}
	}
	// Untrusted: the project is not looked at.
	for _, p := range LayoutProblems(env, false) {
		if p.File == filepath.Join(cwd, ".pi", "facets", "Profiles") {
			t.Errorf("untrusted project reported: %s", p.File)
		}
	}
}

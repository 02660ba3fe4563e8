package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExplainArgvIsDelegateArgv launches Subs through the fake Herdr with
// facets delegate and facets invoke and checks that facets explain printed
// exactly the pi argv Herdr was asked to start.
func TestExplainArgvIsDelegateArgv(t *testing.T) {
	t.Parallel()
	dir, env := runEnv(t)
	example, _ := filepath.Abs("../../testdata/example")
	agent := filepath.Join(example, "agent")
	cwd := filepath.Join(example, "project", "service")
	for _, tc := range []struct {
		profile string
		launch  []string
	}{
		{"reviewer", []string{"delegate", "--profile", "reviewer", "--title", "reviewer", "--task", "go"}},
		{"oracle", []string{"delegate", "--profile", "oracle", "--title", "oracle", "--task", "go"}},
		{"review", []string{"invoke", "--profile", "review"}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			before := len(agentStarts(t, dir))
			args := append(tc.launch, "--agent-dir", agent, "--main-cwd", cwd, "--trust")
			if code, out, errOut := runFacets(t, env, "", args...); code != exitOK {
				t.Fatalf("%v: exit %d\n%s%s", tc.launch, code, out, errOut)
			}
			starts := agentStarts(t, dir)
			if len(starts) != before+1 {
				t.Fatalf("%d agent starts, want %d", len(starts), before+1)
			}
			code, out, errOut := runFacets(t, env, "", "explain", "--format", "json", "--agent-dir", agent, "-C", cwd, "--trust", tc.profile)
			if code != exitOK {
				t.Fatalf("explain: exit %d\n%s%s", code, out, errOut)
			}
			var r struct {
				SubArgv []string `json:"subArgv"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(starts[len(starts)-1], r.SubArgv); diff != "" {
				t.Errorf("explain argv differs from the launched one (-launched +explain):\n%s", diff)
			}
		})
	}
}

// agentStarts returns the pi argv of every "herdr agent start" call the
// fake recorded: what follows "--", without the program name.
func agentStarts(t *testing.T, dir string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "calls.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c struct {
			Argv []string `json:"argv"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.Argv) < 2 || c.Argv[0] != "agent" || c.Argv[1] != "start" {
			continue
		}
		i := slices.Index(c.Argv, "--")
		if i < 0 {
			t.Fatalf("agent start without --: %v", c.Argv)
		}
		argv := c.Argv[i+1:]
		if len(argv) > 0 && argv[0] == "pi" {
			argv = argv[1:]
		}
		out = append(out, argv)
	}
	return out
}

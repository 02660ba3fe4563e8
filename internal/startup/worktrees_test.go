package startup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/pibridge"
	"github.com/facets-dev/facets/runtime/subs"
	"github.com/facets-dev/facets/runtime/worktree"
)

// TestMainStartNamesKeptWorktrees: a Main that starts while finished Subs'
// worktrees still hold work says so in one line; a removed worktree and an
// open run's are not counted, and with none there is no line.
func TestMainStartNamesKeptWorktrees(t *testing.T) {
	agent := t.TempDir()
	state := filepath.Join(agent, "state")
	store := subs.Store{Dir: state}
	w := &worktree.Worktree{Repo: "/r", CommonDir: "/r/.git", Path: "/w", Branch: "facets/p/1", Base: "abc"}
	plan := func() pibridge.Plan {
		t.Helper()
		stdin, _ := json.Marshal(map[string]any{"cwd": agent, "mainSession": "new-main"})
		req := pibridge.DaemonRequest{V: pibridge.DaemonRequestVersion, Dir: agent, Stdin: string(stdin),
			Args: []string{"pi-extension", "plan", "--role", "main", "--protocol", strconv.Itoa(pibridge.Protocol)},
			Env:  []string{envvar.AgentDir + "=" + agent, envvar.Home + "=" + filepath.Join(agent, "home"), envvar.StateDir + "=" + state}}
		reply, err := Answer(req, pibridge.Peer{Protocol: pibridge.Protocol})
		if err != nil || reply.Code != 0 {
			t.Fatalf("plan: %v, exit %d: %s", err, reply.Code, reply.Stderr)
		}
		var p pibridge.Plan
		if err := json.Unmarshal([]byte(reply.Stdout), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	line := func(p pibridge.Plan) string {
		for _, w := range p.Warnings {
			if strings.Contains(w, "worktree") {
				return w
			}
		}
		return ""
	}
	if got := line(plan()); got != "" {
		t.Fatalf("no runs: line %q", got)
	}
	save := func(id string, closed int64, removed bool) {
		if err := store.SaveRun(&subs.Run{Version: subs.RunVersion, RunID: id, MainSessionID: "old-main", ClosedAt: closed, Worktree: w, WorktreeRemoved: removed}); err != nil {
			t.Fatal(err)
		}
	}
	save("open", 0, false)
	save("removed", 1, true)
	if got := line(plan()); got != "" {
		t.Fatalf("an open run and a removed worktree: line %q", got)
	}
	save("kept1", 1, false)
	save("kept2", 2, false)
	want := "2 Facets worktree(s) of finished Subs hold work for review: facets list shows them, facets close --run ID --discard removes one."
	if got := line(plan()); got != want {
		t.Errorf("line = %q\nwant %q", got, want)
	}
	os.RemoveAll(state)
}

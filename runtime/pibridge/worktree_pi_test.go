package pibridge_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/facets-dev/facets/runtime/channel"
)

// TestWorktreeSubsInTmuxWithRealPi: a Main Pi in a git repository hands
// two Subs of a "workspace": "worktree" profile conflicting edits of one
// file at once. Each real Sub Pi edits and commits with its bash tool in
// its own worktree; the Main's checkout stays as it was; close_sub reports
// each branch one commit ahead with the file; the two branches hold the
// two edits.
func TestWorktreeSubsInTmuxWithRealPi(t *testing.T) {
	mock := startMock(t, worktreeScript(2))
	e, git, base := newWorktreePiEnv(t, mock)
	_, tmuxEnv := e.startTmux()

	main := e.startRPC(tmuxEnv, "--no-extensions", "-e", e.bridge, "--profile", "orchestrator", "--session-id", "facets-main-worktree")
	main.send(map[string]any{"id": "p1", "type": "prompt", "message": "edit shared.txt two ways"})
	if r := main.response("p1"); r["success"] != true {
		t.Fatalf("prompt: %v", r)
	}
	closes := waitForCloses(main, mock, 2)
	checkWorktreeCloses(t, e, git, base, closes, "edit 1", "edit 2")
	l := e.facetsJSON(append(tmuxEnv, "PI_FACETS_MAIN_SESSION=facets-main-worktree"), 0, "list")
	if kept := l["worktrees"].([]any); len(kept) != 2 {
		t.Errorf("facets list shows %d kept worktrees, want 2: %v", len(kept), l["text"])
	}
}

// TestWorktreeSubInHerdrWithRealPi is the same with the fake Herdr, whose
// pane runs the real Sub Pi in the directory the tab was created with.
func TestWorktreeSubInHerdrWithRealPi(t *testing.T) {
	mock := startMock(t, worktreeScript(1))
	e, git, base := newWorktreePiEnv(t, mock)
	herdrEnv, herdrState := e.fakeHerdr()
	main := e.startRPC(herdrEnv, "--no-extensions", "-e", e.bridge, "--profile", "orchestrator", "--session-id", "facets-main-worktree-herdr")
	main.send(map[string]any{"id": "p1", "type": "prompt", "message": "edit shared.txt"})
	if r := main.response("p1"); r["success"] != true {
		t.Fatalf("prompt: %v", r)
	}
	_, agent := e.playHerdrPane(main, herdrState)
	if !strings.Contains(agent.Cwd, filepath.Join("facets", "worktrees")) {
		t.Errorf("the Sub's tab opened in %s, not in its worktree", agent.Cwd)
	}
	closes := waitForCloses(main, mock, 1)
	checkWorktreeCloses(t, e, git, base, closes, "edit 1")
}

// worktreeScript is the mock model of a Main that hands n Subs the edit
// EDIT_i of shared.txt and closes each Sub once it reports, and of Subs
// that make their edit and commit it with bash.
func worktreeScript(n int) func(int, chatRequest) reply {
	tag := regexp.MustCompile(`EDIT_(\d):`)
	return func(_ int, req chatRequest) reply {
		last := req.last()
		text := last.text()
		if strings.Contains(req.system(), "<facets_sub_protocol>") {
			// The Sub's task is its first user message.
			var m []string
			for _, msg := range req.Messages {
				if msg.Role == "user" {
					m = tag.FindStringSubmatch(msg.text())
					break
				}
			}
			switch {
			case m == nil:
				return reply{Text: "sub: idle"}
			case last.Role == "user":
				return reply{Tool: "bash", Args: map[string]any{"command": fmt.Sprintf(
					"printf 'edit %s\\n' > shared.txt && git add shared.txt && git commit -q -m 'edit %s' && echo COMMITTED", m[1], m[1])}}
			case last.Role == "tool" && strings.Contains(text, "COMMITTED"):
				return reply{Tool: "talk", Args: map[string]any{"message": "committed " + m[1]}}
			}
			return reply{Text: "sub: done"}
		}
		switch {
		case last.Role == "user" && strings.HasPrefix(text, channel.DeliveryPrefix):
			r, _, err := channel.ParseDeliveryHeader(text)
			if err != nil {
				return reply{Text: "bad header: " + err.Error()}
			}
			return reply{Tool: "close_sub", Args: map[string]any{"runId": r.RunID}}
		case last.Role == "user":
			var calls []reply
			for i := 1; i <= n; i++ {
				calls = append(calls, reply{Tool: "delegate", Args: map[string]any{
					"title": fmt.Sprintf("Edit %d", i), "task": fmt.Sprintf("EDIT_%d: rewrite shared.txt", i), "profile": "writer"}})
			}
			return reply{Calls: calls}
		}
		return reply{Text: "main: waiting"}
	}
}

// newWorktreePiEnv is a Pi test environment whose work directory is a git
// repository holding shared.txt, with an orchestrator and a worktree
// profile "writer"; it returns git run there and the base commit.
func newWorktreePiEnv(t *testing.T, mock *mockModel) (*piEnv, func(...string) string, string) {
	e := newPiEnv(t, mock)
	e.profile("orchestrator", map[string]any{"description": "Delegates work", "model": "mock/mock-model",
		"tools": []string{"read", "delegate", "talk", "close_sub", "list_sub"}, "invocation": "manual"})
	e.profile("writer", map[string]any{"description": "Edits code", "model": "mock/mock-model",
		"tools": []string{"read", "bash"}, "workspace": "worktree"})
	// The user's repository, and a git identity for the Subs' commits.
	e.env = append(e.env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=sub", "GIT_AUTHOR_EMAIL=sub@example.com", "GIT_COMMITTER_NAME=sub", "GIT_COMMITTER_EMAIL=sub@example.com")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = e.work, append(os.Environ(), e.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	writeFile(t, filepath.Join(e.work, "shared.txt"), "original\n")
	git("add", ".")
	git("commit", "-q", "-m", "start")
	return e, git, git("rev-parse", "HEAD")
}

// waitForCloses waits for n close_sub results in the Main's model requests
// and returns them by their first line.
func waitForCloses(main *piProc, mock *mockModel, n int) map[string]string {
	closes := map[string]string{}
	main.waitFor("the Subs closed", 120*time.Second, func([]map[string]any) bool {
		for _, r := range mock.Requests() {
			last := r.last()
			if last.Role == "tool" && strings.HasPrefix(last.text(), "Closed Sub: ") {
				closes[strings.SplitN(last.text(), "\n", 2)[0]] = last.text()
			}
		}
		return len(closes) == n
	})
	return closes
}

// checkWorktreeCloses checks that the Main's checkout is as it was, and
// that each close reported a branch one commit ahead of base with
// shared.txt, the branches holding the edits wanted between them.
func checkWorktreeCloses(t *testing.T, e *piEnv, git func(...string) string, base string, closes map[string]string, wantEdits ...string) {
	t.Helper()

	if got, _ := os.ReadFile(filepath.Join(e.work, "shared.txt")); string(got) != "original\n" {
		t.Errorf("the Main's checkout changed: shared.txt = %q", got)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("the Main's checkout is dirty:\n%s", st)
	}
	branchRe := regexp.MustCompile(`Worktree: branch (facets/writer/[0-9a-f]{8}): 1 commit\(s\) ahead of ` + base[:12] + `, 1 file\(s\) changed, worktree (\S+)`)
	edits := map[string]bool{}
	for title, text := range closes {
		m := branchRe.FindStringSubmatch(text)
		if m == nil || !strings.Contains(text, "shared.txt") {
			t.Fatalf("%s: close_sub result does not report the branch, one commit and the file:\n%s", title, text)
		}
		edits[git("show", m[1]+":shared.txt")] = true
		if _, err := os.Stat(m[2]); err != nil {
			t.Errorf("kept worktree %s: %v", m[2], err)
		}
	}
	for _, want := range wantEdits {
		if !edits[want] {
			t.Errorf("branch contents %v, want one branch per edit of %q", edits, wantEdits)
		}
	}
}

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
	tag := regexp.MustCompile(`EDIT_(\d):`)
	mock := startMock(t, func(n int, req chatRequest) reply {
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
			return reply{Calls: []reply{
				{Tool: "delegate", Args: map[string]any{"title": "Edit one", "task": "EDIT_1: rewrite shared.txt", "profile": "writer"}},
				{Tool: "delegate", Args: map[string]any{"title": "Edit two", "task": "EDIT_2: rewrite shared.txt", "profile": "writer"}},
			}}
		}
		return reply{Text: "main: waiting"}
	})
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
	base := git("rev-parse", "HEAD")
	_, tmuxEnv := e.startTmux()

	main := e.startRPC(tmuxEnv, "--no-extensions", "-e", e.bridge, "--profile", "orchestrator", "--session-id", "facets-main-worktree")
	main.send(map[string]any{"id": "p1", "type": "prompt", "message": "edit shared.txt two ways"})
	if r := main.response("p1"); r["success"] != true {
		t.Fatalf("prompt: %v", r)
	}
	closes := map[string]string{}
	main.waitFor("both Subs closed", 120*time.Second, func([]map[string]any) bool {
		for _, r := range mock.Requests() {
			last := r.last()
			if last.Role == "tool" && strings.HasPrefix(last.text(), "Closed Sub: ") {
				closes[strings.SplitN(last.text(), "\n", 2)[0]] = last.text()
			}
		}
		return len(closes) == 2
	})

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
	if !edits["edit 1"] || !edits["edit 2"] {
		t.Errorf("branch contents %v, want one branch per edit", edits)
	}
	l := e.facetsJSON(append(tmuxEnv, "PI_FACETS_MAIN_SESSION=facets-main-worktree"), 0, "list")
	if kept := l["worktrees"].([]any); len(kept) != 2 {
		t.Errorf("facets list shows %d kept worktrees, want 2: %v", len(kept), l["text"])
	}
}

package pibridge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/runtime/channel"
)

// TestGcAfterKill9InTmuxWithRealPi: a Main Pi in tmux delegates to a real
// Sub Pi; the Main is killed with SIGKILL, the Sub then reports to it (a
// message nobody receives), the Sub is killed with SIGKILL, and the Main's
// next message to it is never read. facets gc lists exactly that run as
// sub-exited; --apply closes its window, archives both messages byte for
// byte and removes the run, and a second gc finds nothing. A Main started
// with --no-session says so in its presence file, so once its runs are
// released its folder goes too; a Main with a session file keeps it.
func TestGcAfterKill9InTmuxWithRealPi(t *testing.T) {
	t.Run("persistent", func(t *testing.T) { gcAfterKill9(t, false) })
	t.Run("ephemeral", func(t *testing.T) { gcAfterKill9(t, true) })
}

func gcAfterKill9(t *testing.T, ephemeral bool) {
	mock := startMock(t, func(n int, req chatRequest) reply {
		last := req.last()
		text := last.text()
		if strings.Contains(req.system(), "<facets_sub_protocol>") {
			if last.Role == "user" && strings.Contains(text, "REPORT_PLEASE") {
				return reply{Tool: "talk", Args: map[string]any{"message": "REPORT_FOR_A_DEAD_MAIN"}}
			}
			return reply{Text: "sub: idle"}
		}
		switch {
		case last.Role == "user" && !strings.HasPrefix(text, channel.DeliveryPrefix):
			return reply{Tool: "delegate", Args: map[string]any{"title": "Doomed", "task": "IDLE_TASK: wait", "profile": "worker"}}
		}
		return reply{Text: "main: ok"}
	})
	e := newPiEnv(t, mock)
	e.profile("orchestrator", map[string]any{"description": "Delegates work", "model": "mock/mock-model",
		"tools": []string{"read", "delegate", "talk", "close_sub", "list_sub"}, "invocation": "manual"})
	e.profile("worker", map[string]any{"description": "Waits", "model": "mock/mock-model", "tools": []string{"read"}})
	srv, tmuxEnv := e.startTmux()
	main := "facets-main-gc"
	args := []string{"--no-extensions", "-e", e.bridge, "--profile", "orchestrator", "--session-id", main}
	if ephemeral {
		args = append(args, "--no-session")
	}
	facets := func(args ...string) string {
		t.Helper()
		out, stderr, code := e.runCmd(append(tmuxEnv, "PI_FACETS_MAIN_SESSION="+main), e.facets, args...)
		if code != 0 {
			t.Fatalf("facets %q: exit %d\n%s%s", args, code, out, stderr)
		}
		return out
	}

	mainPi := e.startRPC(tmuxEnv, args...)
	mainPi.send(map[string]any{"id": "p1", "type": "prompt", "message": "delegate"})
	if r := mainPi.response("p1"); r["success"] != true {
		t.Fatalf("prompt: %v", r)
	}
	var run struct{ RunID, ChannelDir, MainSessionID string }
	mainPi.waitFor("the Sub to take its presence lock", 60*time.Second, func([]map[string]any) bool {
		files, _ := filepath.Glob(filepath.Join(e.agentDir, "facets", "state", "*", "runs", "*.json"))
		if len(files) != 1 {
			return false
		}
		data, _ := os.ReadFile(files[0])
		if json.Unmarshal(data, &run) != nil || run.ChannelDir == "" {
			return false
		}
		main = run.MainSessionID // Pi's own id when --no-session made it ignore ours
		p, _ := channel.SubPresence(run.ChannelDir)
		return p == channel.PresenceLive
	})

	// kill -9 the Main; the Sub reports to it all the same.
	if err := syscall.Kill(mainPi.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Its presence file says whether it can be resumed from a session file.
	root := filepath.Join(e.runtime, fmt.Sprintf("pi-facets-%d", os.Geteuid()))
	waitUntil(t, "the Main's presence lock to be free", 30*time.Second, func() bool {
		p, _, _ := channel.MainPresence(root, channel.Safe(main))
		return p == channel.PresenceExited
	})
	_, lease, err := channel.MainPresence(root, channel.Safe(main))
	if err != nil || lease.Ephemeral != ephemeral || ephemeral == strings.HasSuffix(lease.SessionFile, ".jsonl") {
		t.Errorf("the Main's lease: %+v %v, want ephemeral %v or its session file", lease, err, ephemeral)
	}
	facets("talk", "--run", run.RunID, "--message", "REPORT_PLEASE")
	toMain := filepath.Join(run.ChannelDir, "to-main")
	waitUntil(t, "the Sub's report in the Main's inbox", 60*time.Second, func() bool {
		names, _ := filepath.Glob(filepath.Join(toMain, "*.json"))
		return len(names) == 1
	})

	// kill -9 the Sub's Pi (its window's process); then a message it never reads.
	var pid int
	for _, l := range strings.Split(strings.TrimSpace(srv.tmux("list-panes", "-a", "-F", "#{pane_pid}|#{@facets_run}")), "\n") {
		if p, r, _ := strings.Cut(l, "|"); r == run.RunID {
			pid, _ = strconv.Atoi(p)
		}
	}
	if pid == 0 {
		t.Fatalf("no pane for run %s", run.RunID)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Sub's presence lock to be free", 30*time.Second, func() bool {
		p, _ := channel.SubPresence(run.ChannelDir)
		return p == channel.PresenceExited
	})
	facets("talk", "--run", run.RunID, "--message", "NEVER_READ")
	inbox := channelInboxes(t, run.ChannelDir)
	if len(inbox) != 2 {
		t.Fatalf("inboxes before gc: %q, want the report and the unread message", keys(inbox))
	}

	type leftover struct{ Kind, RunID, Archive string }
	var dry, applied struct{ Leftovers []leftover }
	json.Unmarshal([]byte(facets("gc", "--format", "json")), &dry)
	if diff := cmp.Diff([]leftover{{Kind: "sub-exited", RunID: run.RunID}}, dry.Leftovers); diff != "" {
		t.Errorf("gc dry run (-want +got):\n%s", diff)
	}
	json.Unmarshal([]byte(facets("gc", "--apply", "--format", "json")), &applied)
	if len(applied.Leftovers) != 1 || applied.Leftovers[0].Archive == "" {
		t.Fatalf("gc --apply: %+v", applied)
	}
	if diff := cmp.Diff(inbox, channelInboxes(t, applied.Leftovers[0].Archive)); diff != "" {
		t.Errorf("archive (-before gc +archived):\n%s", diff)
	}
	if out := facets("channel", "inspect", "--dir", applied.Leftovers[0].Archive); !strings.Contains(out, run.RunID) {
		t.Errorf("channel inspect of the archive:\n%s", out)
	}
	if _, err := os.Stat(run.ChannelDir); !os.IsNotExist(err) {
		t.Errorf("channel still there: %v", err)
	}
	if w := srv.windows(); len(w) != 1 {
		t.Errorf("windows after gc: %q, want the Main's alone", w)
	}
	if out := facets("gc"); strings.TrimSpace(out) != "No Facets leftovers." {
		t.Errorf("second gc:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(root, channel.Safe(main))); os.IsNotExist(err) != ephemeral {
		t.Errorf("the Main's channel folder after gc: %v; want it removed only for an ephemeral Main", err)
	}
}

// channelInboxes reads the files of a channel's two inboxes.
func channelInboxes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range []string{"to-main", "to-sub"} {
		entries, err := os.ReadDir(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, d, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[d+"/"+e.Name()] = string(data)
		}
	}
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

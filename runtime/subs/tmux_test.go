package subs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/surface"
	"github.com/facets-dev/facets/runtime/tmux"
)

// tmuxRuntime is a Runtime whose Subs open in a private tmux server (never
// the user's), running a stand-in for Pi that only waits: the channel is
// the test's to play the Sub's part.
func tmuxRuntime(t *testing.T) (*Runtime, string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed; this test drives the real tmux (apt-get install -y tmux, as .ci/run does): %v", err)
	}
	sockDir, err := os.MkdirTemp("", "ftmux")
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(sockDir, "s")
	t.Cleanup(func() {
		exec.Command("tmux", "-S", socket, "kill-server").Run()
		os.RemoveAll(sockDir)
	})
	if out, err := exec.Command("tmux", "-S", socket, "new-session", "-d", "-s", "main", "--", "sleep", "1000000").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	dir := t.TempDir()
	pi := filepath.Join(dir, "pi")
	if err := os.WriteFile(pi, []byte("#!/bin/sh\nexec sleep 1000000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{envvar.Tmux: socket + ",1,0", "PATH": os.Getenv("PATH")}
	c := tmux.New("", func(k string) string { return env[k] }, os.Environ())
	c.Pi = pi
	return &Runtime{Surface: c, Store: Store{Dir: filepath.Join(dir, "state")}, ChannelRoot: filepath.Join(dir, "run"),
		Bridge: testBridge, AgentDir: filepath.Join(dir, "agent")}, socket
}

// TestTmuxRunStatusFromItsChannel: tmux sees no agent, so a Sub there is
// asked to start its own task (selfStart in its channel) and its status is
// what it reports through its channel: submitted until its Pi records its
// session, then idle, working during a turn, queued while a message
// waits. The run records its adapter, and closing it kills its window.
func TestTmuxRunStatusFromItsChannel(t *testing.T) {
	rt, socket := tmuxRuntime(t)
	ctx := context.Background()
	d, err := rt.Delegate(ctx, DelegateRequest{Manifest: exampleManifest(t), MainSessionID: "m", Profile: "oracle", Title: "look", Task: "the task"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Adapter != "tmux" || !strings.HasPrefix(d.TabID, "@") {
		t.Fatalf("delegation %+v, want a tmux window", d)
	}
	run, _, err := rt.Store.LoadRun("m", d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := openChannel(run)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if m := ch.Manifest(); !m.SelfStart || m.Task != "the task" {
		t.Errorf("channel manifest selfStart %v task %q, want the Sub to start its task itself", m.SelfStart, m.Task)
	}
	status := func(want string) {
		t.Helper()
		l, err := rt.List(ctx, "m", true)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Open) != 1 || l.Open[0].Status != want || l.Open[0].Adapter != "tmux" {
			t.Errorf("list %+v, want one tmux Sub %s", l.Open, want)
		}
	}
	status(StatusSubmitted)
	if err := ch.WriteSession("sub-session", ""); err != nil {
		t.Fatal(err)
	}
	status(string(surface.StatusIdle))
	if err := ch.SetActiveTurn("turn-1"); err != nil {
		t.Fatal(err)
	}
	status(string(surface.StatusWorking))
	if err := ch.ClearActiveTurn("turn-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Send(channel.ToSub, "more"); err != nil {
		t.Fatal(err)
	}
	status(StatusQueued)
	if _, err := rt.Close(ctx, "m", d.RunID, ""); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("tmux", "-S", socket, "list-windows", "-a", "-F", "#{window_id}").CombinedOutput()
	if strings.Contains(string(out), d.TabID+"\n") {
		t.Errorf("window %s still open after close:\n%s", d.TabID, out)
	}
}

// TestRunOfAnotherAdapter: a run is listed and closed through the adapter
// that opened it; one this facets does not know is unknown, and its close
// says why instead of asking the wrong surface.
func TestRunOfAnotherAdapter(t *testing.T) {
	rt, _ := tmuxRuntime(t)
	ctx := context.Background()
	d, err := rt.Delegate(ctx, DelegateRequest{Manifest: exampleManifest(t), MainSessionID: "m", Profile: "oracle", Title: "look", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := rt.Store.LoadRun("m", d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	run.Surface.Adapter = "screen"
	if err := rt.Store.SaveRun(run); err != nil {
		t.Fatal(err)
	}
	if l, _ := rt.List(ctx, "m", true); len(l.Open) != 1 || l.Open[0].Status != string(surface.StatusUnknown) || l.Open[0].Adapter != "screen" {
		t.Errorf("list %+v, want the screen run unknown", l.Open)
	}
	if _, err := rt.Close(ctx, "m", d.RunID, ""); err == nil || !strings.Contains(err.Error(), "lives in screen") {
		t.Errorf("close of a screen run: %v", err)
	}
}

// TestTmuxLaunchRollback: a Sub that cannot start in tmux (no Pi) has its
// window closed again, its slot released, and the error names tmux.
func TestTmuxLaunchRollback(t *testing.T) {
	rt, socket := tmuxRuntime(t)
	rt.Surface.(*tmux.CLI).Pi = filepath.Join(t.TempDir(), "no-pi")
	_, err := rt.Delegate(context.Background(), DelegateRequest{Manifest: exampleManifest(t), MainSessionID: "m", Profile: "oracle", Title: "x", Task: "t"})
	if err == nil || !strings.Contains(err.Error(), "tmux launch (tab @") || !strings.Contains(err.Error(), "cannot find Pi") {
		t.Fatalf("delegate without Pi: %v", err)
	}
	out, _ := exec.Command("tmux", "-S", socket, "list-windows", "-a", "-F", "#{window_id}").CombinedOutput()
	if n := strings.Count(string(out), "@"); n != 1 {
		t.Errorf("%d windows after the rollback, want the Main's alone:\n%s", n, out)
	}
	if l, err := rt.List(context.Background(), "m", true); err != nil || len(l.Open) != 0 {
		t.Errorf("open runs after the rollback: %+v %v", l.Open, err)
	}
}

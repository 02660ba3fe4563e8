package herdr

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestFakeTabCloseEndsPaneProcess: like Herdr, the fake ends the program of
// a closed tab's pane (a test registers it in pane-<id>.pid), so a Sub that
// ignores its close request still goes away with its tab. The program here
// ignores SIGHUP, so the fake must go on to SIGTERM.
func TestFakeTabCloseEndsPaneProcess(t *testing.T) {
	f := newFixture(t)
	h, err := f.cli.CreateTab(context.Background(), TabSpec{Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "trap '' HUP; sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	pidFile := filepath.Join(f.Getenv("FAKEHERDR_STATE"), "pane-"+h.PaneID+".pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.cli.CloseTab(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the pane's process is still running after tab close")
	}
}

package pibridge

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestConnUIDIsTheConnectingProcess: the daemon's peer check reads the
// uid the kernel recorded for the connecting process: this test's own.
func TestConnUIDIsTheConnectingProcess(t *testing.T) {
	dir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if uid, err := connUID(c); err != nil || uid != os.Getuid() {
		t.Errorf("connUID = %d, %v; want %d", uid, err, os.Getuid())
	}
}

package channel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFullFilesystemErrorNamesTempFileOnce: the error of a send that runs
// out of space names the temp file once, not once per wrapping layer.
// Mounting a tmpfs needs CAP_SYS_ADMIN (CI runs as root).
func TestFullFilesystemErrorNamesTempFileOnce(t *testing.T) {
	mnt, c := tmpfsChannel(t)
	fillUp(t, mnt)
	_, err := c.Send(ToSub, strings.Repeat("x", 8192))
	if err == nil {
		t.Fatal("send on a full filesystem succeeded")
	}
	if n := strings.Count(err.Error(), ".tmp"); n != 1 {
		t.Errorf("error names the temp file %d times, want once: %v", n, err)
	}
}

// tmpfsChannel mounts a 64 KiB tmpfs, skipping the test where that is not
// permitted, and creates a channel on it.
func tmpfsChannel(t *testing.T) (string, *Channel) {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	c, err := Create(filepath.Join(mnt, "root"), testManifest(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return mnt, c
}

// fillUp writes mnt/filler until the filesystem is full.
func fillUp(t *testing.T, mnt string) {
	t.Helper()
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := filler.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	filler.Close()
}

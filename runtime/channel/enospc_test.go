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
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	c, err := Create(filepath.Join(mnt, "root"), testManifest(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
	_, err = c.Send(ToSub, strings.Repeat("x", 8192))
	if err == nil {
		t.Fatal("send on a full filesystem succeeded")
	}
	if n := strings.Count(err.Error(), ".tmp"); n != 1 {
		t.Errorf("error names the temp file %d times, want once: %v", n, err)
	}
}

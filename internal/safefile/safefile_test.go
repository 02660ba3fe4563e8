package safefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/safefile"
	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

func TestReadFileRefusesHostileFiles(t *testing.T) {
	const limit = 64
	for _, c := range safefiletest.Cases(limit) {
		for _, private := range []bool{false, true} {
			name := c.Name
			if private {
				name += "/private"
			}
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "f.json")
				c.Make(t, path)
				var err error
				safefiletest.Within(t, func() {
					if private {
						_, err = safefile.ReadPrivate(path, limit)
					} else {
						_, err = safefile.ReadFile(path, limit)
					}
				})
				if err == nil || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want an error naming %s", err, path)
				}
				var big *safefile.TooLargeError
				if c.Name == "oversized" && !errors.As(err, &big) {
					t.Errorf("err = %v, want a TooLargeError", err)
				}
				if c.Name != "oversized" && !errors.Is(err, safefile.ErrNotRegular) {
					t.Errorf("err = %v, want ErrNotRegular", err)
				}
			})
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ok")
	os.WriteFile(path, []byte("hello"), 0o644)
	if b, err := safefile.ReadFile(path, 5); err != nil || string(b) != "hello" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(path, link)
	if b, err := safefile.ReadFile(link, 5); err != nil || string(b) != "hello" {
		t.Errorf("ReadFile through a symlink = %q, %v", b, err)
	}
	if _, err := safefile.ReadFile(filepath.Join(dir, "none"), 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := safefile.ReadFile(dir, 5); !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("directory: %v", err)
	}
}

func TestReadPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	os.WriteFile(path, []byte("secret"), 0o600)
	if b, err := safefile.ReadPrivate(path, 64); err != nil || string(b) != "secret" {
		t.Errorf("ReadPrivate = %q, %v", b, err)
	}
	os.Chmod(path, 0o644)
	if _, err := safefile.ReadPrivate(path, 64); !errors.Is(err, safefile.ErrNotPrivate) || !strings.Contains(err.Error(), path) {
		t.Errorf("0644 file: %v", err)
	}
	os.Chmod(path, 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(path, link)
	if _, err := safefile.ReadPrivate(link, 64); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("symlink: %v", err)
	}
	if os.Getuid() == 0 {
		// root can hand a file to another user; others cannot create one.
		os.Chown(path, 12345, -1)
		if _, err := safefile.ReadPrivate(path, 64); !errors.Is(err, safefile.ErrNotPrivate) || !strings.Contains(err.Error(), "uid 12345") {
			t.Errorf("foreign owner: %v", err)
		}
	}
}

// TestReadFileWithoutStatSize: a regular file whose stat size is 0 but
// which has content (procfs) is read to its end, not taken as empty; its
// limit still holds.
func TestReadFileWithoutStatSize(t *testing.T) {
	const path = "/proc/self/status"
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Skipf("needs Linux procfs (%s: %v)", path, err)
	}
	b, err := safefile.ReadFile(path, 1<<20)
	if err != nil || !strings.HasPrefix(string(b), "Name:") || !strings.Contains(string(b), "\nPid:") {
		t.Errorf("ReadFile(%s) = %q, %v; want the whole status", path, b, err)
	}
	if _, err := safefile.ReadFile(path, 16); !errors.As(err, new(*safefile.TooLargeError)) {
		t.Errorf("ReadFile(%s, 16) = %v, want a TooLargeError", path, err)
	}
}

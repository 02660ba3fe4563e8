// Package safefiletest puts hostile files where facets expects a small
// regular one, for the tests of every reader that uses safefile.
package safefiletest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Case is one hostile replacement for a file.
type Case struct {
	Name string
	// Make replaces whatever is at path with the hostile file.
	Make func(tb testing.TB, path string)
}

// Cases returns a FIFO with no writer, a symlink to /dev/zero (endless) and
// a sparse regular file one byte over limit.
func Cases(limit int64) []Case {
	return []Case{
		{Name: "fifo", Make: func(tb testing.TB, path string) {
			tb.Helper()
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				tb.Fatal(err)
			}
		}},
		{Name: "dev-zero", Make: func(tb testing.TB, path string) {
			tb.Helper()
			os.Remove(path)
			if err := os.Symlink("/dev/zero", path); err != nil {
				tb.Fatal(err)
			}
		}},
		{Name: "oversized", Make: func(tb testing.TB, path string) {
			tb.Helper()
			os.Remove(path)
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				tb.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("{}"); err != nil {
				tb.Fatal(err)
			}
			if err := f.Truncate(limit + 1); err != nil {
				tb.Fatal(err)
			}
		}},
	}
}

// Within runs fn and fails tb if it has not returned after a generous
// bound, so a read that blocks on a FIFO fails the test instead of hanging
// it. The bound catches hangs; it is not a performance assertion.
func Within(tb testing.TB, fn func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		tb.Fatal("still blocked after 10 s: the read waited on a special file")
	}
}

// Refused checks a reader against every hostile case: each is made at a
// file called name in a fresh directory, and read(path) must return, without
// blocking, an error naming path.
func Refused(t *testing.T, limit int64, name string, read func(path string) error) {
	t.Helper()
	for _, c := range Cases(limit) {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			c.Make(t, path)
			var err error
			Within(t, func() { err = read(path) })
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("read: %v, want an error naming %s", err, path)
			}
		})
	}
}

// Put writes data to path as an untrusted file facets will read, creating
// its directory.
func Put(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// Kept checks a reader's refusal err of the file at path that held data:
// the error names path, and the file is still there exactly as it was, so
// the user can inspect what was refused instead of losing it.
func Kept(tb testing.TB, err error, path string, data []byte) {
	tb.Helper()
	if err == nil || !strings.Contains(err.Error(), path) {
		tb.Fatalf("refusal %v does not name %s", err, path)
	}
	if on, rerr := os.ReadFile(path); rerr != nil || !bytes.Equal(on, data) {
		tb.Fatalf("refused %s is no longer on disk as it was: %v", path, rerr)
	}
}

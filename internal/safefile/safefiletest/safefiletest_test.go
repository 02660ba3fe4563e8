package safefiletest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB whose Fatalf records the failure instead of
// ending the test, so Kept's own verdicts can be checked.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.failed = true }

func TestKept(t *testing.T) {
	data := []byte("{corrupt")
	for _, tc := range []struct {
		name   string
		err    func(path string) error
		change func(t *testing.T, path string)
		fails  bool
	}{
		{"names the file and keeps it", func(p string) error { return fmt.Errorf("read %s: bad", p) }, nil, false},
		{"accepted instead", func(string) error { return nil }, nil, true},
		{"does not name the file", func(string) error { return errors.New("bad") }, nil, true},
		{"removed the file", func(p string) error { return fmt.Errorf("read %s: bad", p) },
			func(t *testing.T, p string) { os.Remove(p) }, true},
		{"rewrote the file", func(p string) error { return fmt.Errorf("read %s: bad", p) },
			func(t *testing.T, p string) { Put(t, p, []byte("{}")) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "state.json")
			Put(t, path, data)
			if tc.change != nil {
				tc.change(t, path)
			}
			r := &recorder{TB: t}
			Kept(r, tc.err(path), path, data)
			if r.failed != tc.fails {
				t.Errorf("Kept failed = %v, want %v", r.failed, tc.fails)
			}
		})
	}
}

package channel

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadToken(file, "from-env"); err != nil || got != "from-file" {
		t.Errorf("file named: got %q, %v; want the file's token, trimmed", got, err)
	}
	if got, err := ReadToken("", "from-env"); err != nil || got != "from-env" {
		t.Errorf("no file: got %q, %v; want the held token", got, err)
	}
	if _, err := ReadToken("", ""); !errors.Is(err, ErrNoToken) {
		t.Errorf("nothing given: err = %v, want ErrNoToken", err)
	}
	if _, err := ReadToken(filepath.Join(t.TempDir(), "absent"), "from-env"); err == nil || errors.Is(err, ErrNoToken) {
		t.Errorf("unreadable file: err = %v, want a read error (never a silent fallback to the env token)", err)
	}
}

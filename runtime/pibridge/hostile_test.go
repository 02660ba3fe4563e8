package pibridge

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
	"github.com/facets-dev/facets/runtime/channel"
)

// TestOpenOwnedHostileManifest: a run channel whose manifest.json is a
// FIFO, a link to /dev/zero or oversized is refused with its path, without
// blocking the Main's bridge.
func TestOpenOwnedHostileManifest(t *testing.T) {
	for _, c := range safefiletest.Cases(channel.MaxMessageBytes) {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "manifest.json")
			os.WriteFile(path, []byte(`{"token":"t"}`), 0o600)
			c.Make(t, path)
			var err error
			safefiletest.Within(t, func() {
				var ch *channel.Channel
				if ch, err = openOwned(dir); err == nil {
					ch.Close()
				}
			})
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("openOwned: %v, want an error naming %s", err, path)
			}
		})
	}
}

// TestWriteReplacesLinksAndRefusesFIFO: pi-extension install replaces a
// link at any file it writes (its target, here a stand-in for
// a file of the user's, is untouched) and refuses a FIFO there instead of
// blocking on it.
func TestWriteReplacesLinksAndRefusesFIFO(t *testing.T) {
	for _, name := range []string{ExtensionFile, ConfigFile, LegacyFile, PackageFile} {
		dir, outside := t.TempDir(), t.TempDir()
		target := filepath.Join(outside, "mine")
		os.WriteFile(target, []byte("keep"), 0o644)
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if _, err := Write(dir, Config{}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(target); string(b) != "keep" {
			t.Errorf("%s: written through the link: %.40q", name, b)
		}
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: link not replaced: %v %v", name, fi, err)
		}
		dir = t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		safefiletest.Within(t, func() { _, err = Write(dir, Config{}) })
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("%s: FIFO: err = %v", name, err)
		}
	}
}

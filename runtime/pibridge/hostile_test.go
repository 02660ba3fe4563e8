package pibridge

import (
	"os"
	"path/filepath"
	"strings"
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

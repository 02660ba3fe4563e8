package herdr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// TestVisibilityStateHostile: the saved visibility state replaced by a
// FIFO, /dev/zero or an oversized file is refused with its path.
func TestVisibilityStateHostile(t *testing.T) {
	for _, c := range safefiletest.Cases(maxVisibilityBytes) {
		t.Run(c.Name, func(t *testing.T) {
			v := Visibility{StateDir: t.TempDir()}
			path := filepath.Join(v.StateDir, visibilityFile)
			os.WriteFile(path, []byte("{}"), 0o600)
			c.Make(t, path)
			var err error
			safefiletest.Within(t, func() { _, err = v.load() })
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("load: %v, want an error naming %s", err, path)
			}
		})
	}
}

package herdr

import (
	"path/filepath"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// TestVisibilityStateHostile: the saved visibility state replaced by a
// FIFO, /dev/zero or an oversized file is refused with its path.
func TestVisibilityStateHostile(t *testing.T) {
	safefiletest.Refused(t, maxVisibilityBytes, visibilityFile, func(path string) error {
		v := Visibility{StateDir: filepath.Dir(path)}
		_, err := v.load()
		return err
	})
}

package manifest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// TestReadManifestHostile: a frozen manifest replaced by a FIFO, /dev/zero
// or an oversized file is refused with its path, without blocking.
func TestReadManifestHostile(t *testing.T) {
	schema, err := cue.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range safefiletest.Cases(MaxManifestBytes) {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "manifest.json")
			c.Make(t, path)
			safefiletest.Within(t, func() { _, err = ReadManifest(schema, path) })
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadManifest: %v, want an error naming %s", err, path)
			}
		})
	}
}

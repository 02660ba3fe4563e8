package manifest

import (
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
	safefiletest.Refused(t, MaxManifestBytes, "manifest.json", func(path string) error {
		_, err := ReadManifest(schema, path)
		return err
	})
}

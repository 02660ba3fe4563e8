package compiler

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/safefile/safefiletest"
	"github.com/facets-dev/facets/manifest"
)

// TestVerifyFileHostile: verify refuses a hostile manifest file the same
// way, naming it.
func TestVerifyFileHostile(t *testing.T) {
	schema, err := cue.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range safefiletest.Cases(manifest.MaxManifestBytes) {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "manifest.json")
			c.Make(t, path)
			safefiletest.Within(t, func() { _, err = VerifyFile(schema, path, Options{}) })
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("VerifyFile: %v, want an error naming %s", err, path)
			}
		})
	}
}

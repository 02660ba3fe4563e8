package compiler

import (
	"testing"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// TestVerifyFileHostile: verify refuses a hostile manifest file the same
// way, naming it.
func TestVerifyFileHostile(t *testing.T) {
	schema := loadSchema(t)
	safefiletest.Refused(t, manifest.MaxBytes, "manifest.json", func(path string) error {
		_, err := VerifyFile(schema, path, Options{})
		return err
	})
}

package pibridge_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestVersionsPinnedOnce: .ci/run takes the Node, Pi and TypeScript versions
// from versionsFile, as the test helper does, and pins none of its own.
func TestVersionsPinnedOnce(t *testing.T) {
	vs, err := pinnedVersions()
	if err != nil {
		t.Fatal(err)
	}
	run, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^source runtime/pibridge/` + regexp.QuoteMeta(versionsFile) + `$`).Match(run) {
		t.Errorf(".ci/run does not source runtime/pibridge/%s", versionsFile)
	}
	for k := range vs {
		if regexp.MustCompile(`(?m)^\s*` + k + `=`).Match(run) {
			t.Errorf(".ci/run sets %s itself; it must come from %s only", k, versionsFile)
		}
	}
}

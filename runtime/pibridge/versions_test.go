package pibridge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// TestImportsFlowOneWay: the bridge is runtime; it imports neither the
// profiles loader, the CUE layer nor the compiler proper (only the
// compiler's diag and manifest types), so data flows one way.
func TestImportsFlowOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const mod = "github.com/facets-dev/facets/"
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, mod)
		if !ok {
			continue
		}
		if rel == "profiles" || rel == "cue" || strings.HasPrefix(rel, "cue/") || rel == "compiler" {
			t.Errorf("runtime/pibridge imports %s", p)
		}
	}
}

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

// TestPiHomeIsOneRule: .ci/run, which installs Node and Pi, the scripts
// that use them and the tests that look for them agree on where they are,
// whatever of FACETS_PI_HOME, XDG_CACHE_HOME and HOME is set (bash
// evaluates the scripts' spelling).
func TestPiHomeIsOneRule(t *testing.T) {
	for _, f := range []string{"../../.ci/run", "extension/build.sh", "bench-startup.sh"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), piHomeRule) {
			t.Errorf("%s does not find Node and Pi by %s", f, piHomeRule)
		}
	}
	for _, env := range []map[string]string{
		{"HOME": "/h"},
		{"HOME": "/h", "XDG_CACHE_HOME": "/x"},
		{"HOME": "/h", "XDG_CACHE_HOME": "/x", "FACETS_PI_HOME": "/p"},
	} {
		want, err := piHomeOf(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "-c", "echo "+piHomeRule)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%v: the scripts look in %s, the tests in %s", env, got, want)
		}
	}
}

package herdrtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var binDir string

func TestMain(m *testing.M) { Main(m, &binDir) }

// TestFakeIsThisTestBinary: the fake herdr is the test binary itself (no
// subprocess build whose sources go test's cache cannot see, nothing
// written into the repository), and it answers as herdr. Under -race it is
// the one build without the race detector (raceBuild), of the same sources
// the test binary holds.
func TestFakeIsThisTestBinary(t *testing.T) {
	exe, err := os.Executable()
	if raceEnabled {
		exe, err = raceBuild()
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{binDir, Binary(t)} {
		fake, err := os.Stat(filepath.Join(dir, "herdr"))
		if err != nil {
			t.Fatal(err)
		}
		self, err := os.Stat(exe)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(fake, self) {
			t.Errorf("%s/herdr is not this test binary %s: a separately built fake is not an input of go test's cache", dir, exe)
		}
		if wd, _ := os.Getwd(); strings.HasPrefix(dir, filepath.Dir(filepath.Dir(wd))) {
			t.Errorf("the fake lives in %s, inside the repository", dir)
		}
	}
	f := New(t, binDir, t.TempDir(), t.TempDir())
	if out := f.Run("--version"); !strings.HasPrefix(out, "herdr ") {
		t.Errorf("herdr --version = %q", out)
	}
}

package herdr

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/herdrtest"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// fakeBinDir holds the fake herdr executable built once for the package.
var fakeBinDir string

func TestMain(m *testing.M) { herdrtest.Main(m, &fakeBinDir) }

type (
	fakeControl = herdrtest.Control
	fakeFailure = herdrtest.Failure
)

// fixture is one fake Herdr session and a CLI adapter pointed at it.
type fixture struct {
	*herdrtest.Fake
	t   *testing.T
	cli *CLI
}

// newFixture starts a fake Herdr; extraEnv entries override the pane
// environment it would give the adapter.
func newFixture(t *testing.T, extraEnv ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	fake := herdrtest.New(t, fakeBinDir, dir, dir)
	fake.Env = append(fake.Env, extraEnv...)
	return &fixture{Fake: fake, t: t, cli: &CLI{Runner: ExecRunner{Env: fake.Env}, Getenv: fake.Getenv}}
}

// tokenFile writes an owner-only token file and returns its path.
func (f *fixture) tokenFile() string {
	f.t.Helper()
	token := "f00dfacecafebeef" + strings.Repeat("0123456789abcdef", 3)
	path := filepath.Join(f.t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./herdr -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from golden file (run with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

package herdr

import (
	"testing"

	"github.com/facets-dev/facets/internal/fakeherdr"
	"github.com/facets-dev/facets/internal/herdrtest"
	"github.com/facets-dev/facets/internal/surfacetest"
	"github.com/facets-dev/facets/runtime/surface"
)

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

// TestSurfaceContract: the Herdr adapter, against the fake Herdr as 0.8.2
// and as the 0.9 line, answers the contract the runtime relies on (tmux's
// adapter answers the same one against the real tmux).
func TestSurfaceContract(t *testing.T) {
	for _, v := range []string{fakeherdr.Version082, fakeherdr.Version09} {
		t.Run("herdr "+v, func(t *testing.T) {
			surfacetest.Run(t, func(t *testing.T) surface.Surface {
				f := newFixture(t)
				f.SetControl(fakeControl{Version: v})
				return f.cli
			}, []string{"--no-session"})
		})
	}
}

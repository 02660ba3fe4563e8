package subs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/herdr"
	"github.com/facets-dev/facets/internal/exampletest"
	"github.com/facets-dev/facets/internal/herdrtest"
	"github.com/facets-dev/facets/runtime/channel"
)

// fakeBinDir holds the fake herdr executable, built once for the package.
var fakeBinDir string

func TestMain(m *testing.M) { herdrtest.Main(m, &fakeBinDir) }

// compiledExample caches the compiled (trusted) example; compiling is
// deterministic, so sharing it between tests changes nothing.
var compiledExample *manifest.Manifest

func exampleManifest(tb testing.TB) *manifest.Manifest {
	tb.Helper()
	if compiledExample != nil {
		return compiledExample
	}
	m := exampletest.Manifest(tb, "../../testdata/example", true)
	compiledExample = m
	return m
}

const testBridge = "/opt/facets/pi/bridge.ts"

// fixture is one fake Herdr, a state dir and channel root, and a way to
// make fresh Runtimes over them (a new Runtime is a new CLI process).
type fixture struct {
	*herdrtest.Fake
	tb       testing.TB
	dir      string
	herdrDir string
	manifest *manifest.Manifest
	now      time.Time
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	dir := tb.TempDir()
	herdrDir := filepath.Join(dir, "herdr")
	if err := os.Mkdir(herdrDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	fake := herdrtest.New(tb, fakeBinDir, herdrDir, dir)
	return &fixture{Fake: fake, tb: tb, dir: dir, herdrDir: herdrDir, manifest: exampleManifest(tb),
		now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
}

func (f *fixture) runtime() *Runtime {
	return &Runtime{
		Surface:     &herdr.CLI{Runner: herdr.ExecRunner{Env: f.Env}, Getenv: f.Getenv},
		Store:       Store{Dir: filepath.Join(f.dir, "state")},
		ChannelRoot: filepath.Join(f.dir, "run"),
		Bridge:      testBridge,
		AgentDir:    filepath.Join(f.dir, "agent"),
		Now:         func() time.Time { return f.now },
	}
}

func (f *fixture) delegate(main, profile, title string) Delegation {
	f.tb.Helper()
	d, err := f.runtime().Delegate(context.Background(), DelegateRequest{
		Manifest: f.manifest, MainSessionID: main, Profile: profile, Title: title, Task: "task: " + title,
	})
	if err != nil {
		f.tb.Fatalf("delegate %s: %v", title, err)
	}
	return d
}

type (
	fakeFailure = herdrtest.Failure
	fakeControl = herdrtest.Control
	fakePane    = herdrtest.Pane
	fakeState   = herdrtest.State
)

// run loads the stored record of the Main's run runID, failing the test
// if it cannot.
func (f *fixture) run(runID string) *Run {
	f.tb.Helper()
	run, ok, err := f.runtime().Store.LoadRun(mainID, runID)
	if err != nil || !ok {
		f.tb.Fatalf("load run %s: found %v, %v", runID, ok, err)
	}
	return run
}

// close closes the Main's Sub of runID, failing the test if it cannot.
func (f *fixture) close(runID string) {
	f.tb.Helper()
	if _, err := f.runtime().Close(context.Background(), mainID, runID, ""); err != nil {
		f.tb.Fatal(err)
	}
}

func (f *fixture) control(c fakeControl) { f.SetControl(c) }
func (f *fixture) state() fakeState      { return f.State() }
func (f *fixture) commands() []string    { return f.Commands() }

// subTabs lists the tab ids other than the Main's own w1:t1.
func (f *fixture) subTabs() []string {
	f.tb.Helper()
	return slices.DeleteFunc(f.TabIDs(), func(id string) bool { return id == "w1:t1" })
}

// wantNoSubs fails the test unless no Sub tab is left and no run of the Main
// holds a slot, after what the test just did.
func (f *fixture) wantNoSubs(after string) {
	f.tb.Helper()
	if tabs := f.subTabs(); len(tabs) != 0 {
		f.tb.Errorf("tabs after %s: %v", after, tabs)
	}
	if got := f.openRuns(mainID); len(got) != 0 {
		f.tb.Errorf("open runs after %s: %v", after, got)
	}
}

// openRuns returns the ids of the Main's runs that hold a slot.
func (f *fixture) openRuns(main string) []string {
	f.tb.Helper()
	runs, err := f.runtime().Store.Runs(main)
	if err != nil {
		f.tb.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		if r.Open() {
			ids = append(ids, r.RunID)
		}
	}
	return ids
}

// sub opens a run's channel the way the Sub does: with the token read
// from the file named in its tab's PI_FACETS_TOKEN_FILE.
func (f *fixture) sub(runID string) *channel.Channel {
	f.tb.Helper()
	for _, p := range f.state().Panes {
		if p.Tokens["facets_run_id"] != runID {
			continue
		}
		tab := f.state().Tabs[p.TabID]
		token, err := os.ReadFile(tab.Env["PI_FACETS_TOKEN_FILE"])
		if err != nil {
			f.tb.Fatal(err)
		}
		ch, err := channel.Open(tab.Env["PI_FACETS_CHANNEL"], strings.TrimSpace(string(token)))
		if err != nil {
			f.tb.Fatal(err)
		}
		f.tb.Cleanup(func() { ch.Close() })
		return ch
	}
	f.tb.Fatalf("no pane for run %s", runID)
	return nil
}

// pane returns the fake pane whose metadata names runID.
func (f *fixture) pane(runID string) fakePane {
	f.tb.Helper()
	for _, p := range f.state().Panes {
		if p.Tokens["facets_run_id"] == runID {
			return *p
		}
	}
	f.tb.Fatalf("no pane for run %s", runID)
	return fakePane{}
}

func profileNamed(tb testing.TB, m *manifest.Manifest, name string) manifest.Profile {
	tb.Helper()
	p, err := findProfile(m, name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func waitForFile(t *testing.T, path string) { herdrtest.WaitForFile(t, path) }

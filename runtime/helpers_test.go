package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/herdr"
	"github.com/facets-dev/facets/profiles"
	"github.com/facets-dev/facets/runtime/channel"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// fakeBinDir holds the fake herdr executable, built once for the package.
var fakeBinDir string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "runtime-fakeherdr-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "herdr"), "github.com/facets-dev/facets/herdr/fakeherdr")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building fake herdr:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	fakeBinDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// manifests caches the compiled example per trust decision; compiling is
// deterministic, so sharing it between tests changes nothing.
var manifests = map[bool]*compiler.Manifest{}

func exampleManifest(tb testing.TB) *compiler.Manifest {
	tb.Helper()
	if m := manifests[true]; m != nil {
		return m
	}
	example, err := filepath.Abs("../testdata/example")
	if err != nil {
		tb.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "PI_CODING_AGENT_DIR" {
			return filepath.Join(example, "agent")
		}
		return ""
	}
	env, err := profiles.NewEnv(getenv, tb.TempDir(), filepath.Join(example, "project", "service"))
	if err != nil {
		tb.Fatal(err)
	}
	schema, err := cue.Load()
	if err != nil {
		tb.Fatal(err)
	}
	trusted := true
	m, _, err := compiler.Compile(schema, compiler.Options{Env: env, TrustFlag: &trusted})
	if err != nil {
		tb.Fatal(err)
	}
	manifests[true] = m
	return m
}

const testBridge = "/opt/facets/pi/bridge.ts"

// fixture is one fake Herdr, a state dir and channel root, and a way to
// make fresh Runtimes over them (a new Runtime is a new CLI process).
type fixture struct {
	tb       testing.TB
	dir      string
	herdrDir string
	env      []string
	manifest *compiler.Manifest
	now      time.Time
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	dir := tb.TempDir()
	herdrDir := filepath.Join(dir, "herdr")
	if err := os.Mkdir(herdrDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	env := []string{
		"PATH=" + fakeBinDir,
		"HOME=" + dir,
		"FAKEHERDR_STATE=" + herdrDir,
		"HERDR_ENV=1",
		"HERDR_WORKSPACE_ID=w1",
		"HERDR_SOCKET_PATH=" + filepath.Join(herdrDir, "herdr.sock"),
	}
	return &fixture{tb: tb, dir: dir, herdrDir: herdrDir, env: env, manifest: exampleManifest(tb),
		now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
}

func (f *fixture) runtime() *Runtime {
	env := f.env
	return &Runtime{
		Surface: &herdr.CLI{Runner: herdr.ExecRunner{Env: env}, Getenv: func(k string) string {
			for _, kv := range env {
				if name, v, ok := strings.Cut(kv, "="); ok && name == k {
					return v
				}
			}
			return ""
		}},
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

type fakeFailure struct {
	Code        string `json:"code,omitempty"`
	Message     string `json:"message,omitempty"`
	AfterEffect bool   `json:"after_effect,omitempty"`
}

type fakeControl struct {
	Fail        map[string]fakeFailure `json:"fail,omitempty"`
	Hang        []string               `json:"hang,omitempty"`
	Malformed   map[string]string      `json:"malformed,omitempty"`
	AgentStatus string                 `json:"agent_status,omitempty"`
}

func (f *fixture) control(c fakeControl) {
	f.tb.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		f.tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.herdrDir, "control.json"), data, 0o600); err != nil {
		f.tb.Fatal(err)
	}
}

type fakeTab struct {
	Label string            `json:"label"`
	Env   map[string]string `json:"env"`
	Panes []string          `json:"panes"`
}

type fakePane struct {
	TabID  string            `json:"tab_id"`
	Tokens map[string]string `json:"tokens"`
	Agent  *struct {
		Name    string   `json:"name"`
		Kind    string   `json:"kind"`
		Args    []string `json:"args"`
		Prompts []string `json:"prompts"`
	} `json:"agent"`
}

type fakeState struct {
	Tabs  map[string]fakeTab  `json:"tabs"`
	Panes map[string]fakePane `json:"panes"`
}

func (f *fixture) state() fakeState {
	f.tb.Helper()
	var st fakeState
	data, err := os.ReadFile(filepath.Join(f.herdrDir, "state.json"))
	if err != nil {
		f.tb.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		f.tb.Fatal(err)
	}
	return st
}

// subTabs lists the tab ids other than the Main's own w1:t1.
func (f *fixture) subTabs() []string {
	f.tb.Helper()
	var ids []string
	for id := range f.state().Tabs {
		if id != "w1:t1" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// commands lists the fake's calls as "tab create", "agent start", ...
func (f *fixture) commands() []string {
	f.tb.Helper()
	data, err := os.ReadFile(filepath.Join(f.herdrDir, "calls.jsonl"))
	if err != nil {
		f.tb.Fatal(err)
	}
	var out []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var c struct {
			Argv []string `json:"argv"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			f.tb.Fatal(err)
		}
		if len(c.Argv) >= 2 && !strings.HasPrefix(c.Argv[0], "-") {
			out = append(out, c.Argv[0]+" "+c.Argv[1])
		} else {
			out = append(out, strings.Join(c.Argv, " "))
		}
	}
	return out
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
			return p
		}
	}
	f.tb.Fatalf("no pane for run %s", runID)
	return fakePane{}
}

func profileNamed(tb testing.TB, m *compiler.Manifest, name string) compiler.Profile {
	tb.Helper()
	p, err := findProfile(m, name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// waitForFile polls for a marker the fake writes; the test's own deadline
// bounds it, so no timing is asserted.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Package herdrtest runs the fake herdr (internal/fakeherdr) as an executable
// and steers and reads its state, for tests of code that drives Herdr.
package herdrtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facets-dev/facets/internal/fakectl"
	"github.com/facets-dev/facets/internal/fakeherdr"
)

// The fake herdr is this test binary run under the name "herdr": Dispatch
// (called by Main, or first thing in a package's own TestMain) turns the
// process into the fake when it was started as herdr. Nothing is compiled
// in a subprocess, so the fake's code is part of the test binary and go
// test's cache sees every change to it, and nothing is written into the
// repository: the "herdr" is a symlink in a temporary directory.

// fakeName is the program name under which the test binary is the fake.
const fakeName = "herdr"

// dispatching records that this test binary runs the fake when started as
// herdr (Dispatch was called), without which Binary would hand out a
// symlink that runs the tests instead.
var dispatching bool

// Dispatch runs the fake herdr and exits if this process was started as
// herdr; otherwise it returns and the tests run. Call it first in TestMain
// (Main does).
func Dispatch() {
	dispatching = true
	if filepath.Base(os.Args[0]) == fakeName {
		os.Exit(fakeherdr.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
}

// Commands is Dispatch for a TestMain that uses testscript.Main: merge it
// into testscript's command map, which runs the fake when the binary is
// started as herdr.
func Commands() map[string]func() {
	dispatching = true
	return map[string]func(){fakeName: func() { os.Exit(fakeherdr.Main(os.Args[1:], os.Stdout, os.Stderr)) }}
}

// Binary returns a directory holding "herdr", the fake, that lives as long
// as the test.
func Binary(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := linkInto(dir); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// linkInto makes dir/herdr a symlink to this test binary, or under the race
// detector to a fake built without it (raceBuild).
func linkInto(dir string) error {
	if !dispatching {
		return errors.New("herdrtest: the fake herdr is this test binary; call herdrtest.Main, herdrtest.Dispatch or herdrtest.Commands from TestMain")
	}
	exe, err := os.Executable()
	if raceEnabled {
		exe, err = raceBuild()
	}
	if err != nil {
		return fmt.Errorf("fake herdr: %w", err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, fakeName)); err != nil {
		return fmt.Errorf("fake herdr: %w", err)
	}
	return nil
}

// The race detector makes every start of a binary about 60 ms slower (88 ms
// against 25 ms for this one), and the runtime's tests start the fake for
// every herdr command: most of their time under -race went there, on a
// process whose own races are not what the tests look for. Under -race the
// fake is therefore a separate build without it (internal/fakeherdr/herdr.go,
// through the go command's cache), once per test process.
var (
	raceOnce sync.Once
	raceBin  string
	raceErr  error
)

func raceBuild() (string, error) {
	raceOnce.Do(func() {
		_, self, _, ok := runtime.Caller(0)
		if !ok {
			raceErr = errors.New("cannot locate internal/fakeherdr")
			return
		}
		dir, err := os.MkdirTemp("", "fakeherdr-norace-")
		if err != nil {
			raceErr = err
			return
		}
		raceBin = filepath.Join(dir, fakeName)
		src := filepath.Join(filepath.Dir(self), "..", "fakeherdr", "herdr.go")
		cmd := exec.Command("go", "build", "-o", raceBin, src)
		cmd.Dir = filepath.Dir(src)
		if out, err := cmd.CombinedOutput(); err != nil {
			raceErr = fmt.Errorf("go build %s: %v\n%s", src, err, out)
		}
	})
	return raceBin, raceErr
}

// Cleanup removes the fake built for -race, if any; a TestMain that calls
// Dispatch or Commands calls it before it exits (Main does).
func Cleanup() {
	if raceBin != "" {
		os.RemoveAll(filepath.Dir(raceBin))
	}
}

// Main runs the fake when started as herdr (Dispatch); otherwise it links
// the fake into a temporary directory, stores that in *binDir, runs the
// package's tests and exits with their status. Call it from TestMain.
func Main(m *testing.M, binDir *string) {
	Dispatch()
	flag.Parse()
	dir, err := os.MkdirTemp("", "fakeherdr-bin-")
	if err == nil {
		err = linkInto(dir)
	}
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	*binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	Cleanup()
	os.Exit(code)
}

// Fake is one fake Herdr server: its state directory and the environment a
// Herdr pane would give the process under test.
type Fake struct {
	tb  testing.TB
	Dir string   // FAKEHERDR_STATE: state.json, calls.jsonl, control.json
	Env []string // PATH, HOME, FAKEHERDR_STATE and the HERDR_* variables
}

// New prepares a fake whose state lives in stateDir, run from binDir, with
// home as HOME. The workspace is w1, whose first tab is the caller's own.
func New(tb testing.TB, binDir, stateDir, home string) *Fake {
	env := []string{
		"PATH=" + binDir,
		"HOME=" + home,
		"FAKEHERDR_STATE=" + stateDir,
		"HERDR_ENV=1",
		"HERDR_WORKSPACE_ID=w1",
		"HERDR_SOCKET_PATH=" + filepath.Join(stateDir, "herdr.sock"),
	}
	return &Fake{tb: tb, Dir: stateDir, Env: append(env, CoverEnv(tb)...)}
}

// CoverEnv is the environment a re-run of this test binary (the fake herdr,
// or the binary as facets) needs under go test -cover: a GOCOVERDIR, so
// the coverage runtime writes its data there instead of a warning on the
// stderr the tests read. It is empty without -cover.
func CoverEnv(tb testing.TB) []string {
	if testing.CoverMode() == "" {
		return nil
	}
	return []string{"GOCOVERDIR=" + tb.TempDir()}
}

// Getenv looks a variable up in the fake's environment; as with exec, a
// later entry overrides an earlier one.
func (f *Fake) Getenv(name string) string {
	for i := len(f.Env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(f.Env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// Control is fakeherdr's control.json: which steps fail, hang or answer
// malformed output, and what agent status to report.
type Control = fakectl.Control

// Never is a PromptSubmitMS that never presses Enter, so a prompted agent
// stays idle for the whole test.
func Never() *int { n := -1; return &n }

// Restart simulates a fresh Herdr server at the same socket: every tab,
// pane and agent is gone and ids start again at w1:t1 (the Main's tab),
// so a stored id may now name an unrelated tab.
func (f *Fake) Restart() {
	f.tb.Helper()
	if err := os.Remove(filepath.Join(f.Dir, "state.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.tb.Fatal(err)
	}
}

// Run invokes the fake herdr with args in the fake's environment, as a
// user would in another pane, and returns its stdout.
func (f *Fake) Run(args ...string) string {
	f.tb.Helper()
	cmd := exec.Command(filepath.Join(f.Getenv("PATH"), "herdr"), args...)
	cmd.Env = f.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		f.tb.Fatalf("herdr %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}

// ExitAgent ends the agent in pane as if its process quit while the tab
// stays open: agent get and agent prompt then answer agent_not_found.
func (f *Fake) ExitAgent(pane string) {
	f.tb.Helper()
	path := filepath.Join(f.Dir, "state.json")
	data, err := os.ReadFile(path)
	if err != nil {
		f.tb.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		f.tb.Fatal(err)
	}
	panes, _ := st["panes"].(map[string]any)
	p, _ := panes[pane].(map[string]any)
	a, _ := p["agent"].(map[string]any)
	if a == nil {
		f.tb.Fatalf("pane %s has no agent", pane)
	}
	a["exited"] = true
	if data, err = json.Marshal(st); err != nil {
		f.tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		f.tb.Fatal(err)
	}
}

// Failure is how one step fails.
type Failure = fakectl.Failure

// SetControl writes control.json.
func (f *Fake) SetControl(c Control) {
	f.tb.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		f.tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.Dir, "control.json"), data, 0o600); err != nil {
		f.tb.Fatal(err)
	}
}

// Call is one recorded invocation of the fake.
type Call struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
}

// Calls returns every recorded invocation, oldest first.
func (f *Fake) Calls() []Call {
	f.tb.Helper()
	data, err := os.ReadFile(filepath.Join(f.Dir, "calls.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.tb.Fatal(err)
	}
	var calls []Call
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var c Call
		if err := json.Unmarshal(line, &c); err != nil {
			f.tb.Fatalf("calls.jsonl: %v", err)
		}
		calls = append(calls, c)
	}
	return calls
}

// Commands lists the calls as "tab create", "agent start", ...
func (f *Fake) Commands() []string {
	f.tb.Helper()
	var out []string
	for _, c := range f.Calls() {
		if len(c.Argv) >= 2 && !strings.HasPrefix(c.Argv[0], "-") {
			out = append(out, c.Argv[0]+" "+c.Argv[1])
		} else {
			out = append(out, strings.Join(c.Argv, " "))
		}
	}
	return out
}

// State is the fake's state.json; Tab and Pane are its tabs and panes.
type (
	State = fakectl.State
	Tab   = fakectl.Tab
	Pane  = fakectl.Pane
)

// State reads state.json.
func (f *Fake) State() State {
	f.tb.Helper()
	var st State
	data, err := os.ReadFile(filepath.Join(f.Dir, "state.json"))
	if err != nil {
		f.tb.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		f.tb.Fatal(err)
	}
	return st
}

// TabIDs lists the open tabs, sorted.
func (f *Fake) TabIDs() []string {
	f.tb.Helper()
	var ids []string
	for id := range f.State().Tabs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// WaitForFile polls for a marker the fake writes; the test's own deadline
// bounds it, so no timing is asserted.
func WaitForFile(tb testing.TB, path string) {
	tb.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TokenFile writes an owner-only capability token file, as the runtime
// creates for a Sub, and returns its path.
func TokenFile(tb testing.TB) string {
	tb.Helper()
	token := "f00dfacecafebeef" + strings.Repeat("0123456789abcdef", 3)
	path := filepath.Join(tb.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

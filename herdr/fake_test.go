package herdr

import (
	"bytes"
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
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// fakeBinDir holds the fake herdr executable built once for the package.
var fakeBinDir string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "fakeherdr-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "herdr"), "./fakeherdr")
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

// fixture is one fake Herdr session and a CLI adapter pointed at it.
type fixture struct {
	t   *testing.T
	dir string
	env []string
	cli *CLI
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	env := []string{
		"PATH=" + fakeBinDir,
		"HOME=" + dir,
		"FAKEHERDR_STATE=" + dir,
		"HERDR_ENV=1",
		"HERDR_WORKSPACE_ID=w1",
		"HERDR_SOCKET_PATH=" + filepath.Join(dir, "herdr.sock"),
	}
	return newFixtureEnv(t, dir, env)
}

func newFixtureEnv(t *testing.T, dir string, env []string) *fixture {
	f := &fixture{t: t, dir: dir, env: env}
	f.cli = &CLI{
		Runner: ExecRunner{Env: env},
		Getenv: func(name string) string { return envValue(env, name) },
	}
	return f
}

// fakeControl mirrors fakeherdr's control.json.
type fakeControl struct {
	Version     string                 `json:"version,omitempty"`
	Server      string                 `json:"server,omitempty"`
	Fail        map[string]fakeFailure `json:"fail,omitempty"`
	Hang        []string               `json:"hang,omitempty"`
	Malformed   map[string]string      `json:"malformed,omitempty"`
	AgentStatus string                 `json:"agent_status,omitempty"`
}

type fakeFailure struct {
	Code        string `json:"code,omitempty"`
	Message     string `json:"message,omitempty"`
	Exit        int    `json:"exit,omitempty"`
	AfterEffect bool   `json:"after_effect,omitempty"`
}

func (f *fixture) control(c fakeControl) {
	f.t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "control.json"), data, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

type fakeCall struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
}

func (f *fixture) calls() []fakeCall {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, "calls.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	var calls []fakeCall
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var c fakeCall
		if err := json.Unmarshal(line, &c); err != nil {
			f.t.Fatalf("calls.jsonl: %v", err)
		}
		calls = append(calls, c)
	}
	return calls
}

// commands lists the calls as "tab create", "agent start", ...
func (f *fixture) commands() []string {
	var out []string
	for _, c := range f.calls() {
		if len(c.Argv) >= 2 && !strings.HasPrefix(c.Argv[0], "-") {
			out = append(out, c.Argv[0]+" "+c.Argv[1])
		} else {
			out = append(out, strings.Join(c.Argv, " "))
		}
	}
	return out
}

type fakeState struct {
	Tabs map[string]struct {
		Label string            `json:"label"`
		Env   map[string]string `json:"env"`
		Panes []string          `json:"panes"`
	} `json:"tabs"`
	Panes map[string]struct {
		Tokens map[string]string `json:"tokens"`
		Source string            `json:"metadata_source"`
		Agent  *struct {
			Name    string   `json:"name"`
			Kind    string   `json:"kind"`
			Args    []string `json:"args"`
			Prompts []string `json:"prompts"`
		} `json:"agent"`
	} `json:"panes"`
}

func (f *fixture) state() fakeState {
	f.t.Helper()
	var st fakeState
	data, err := os.ReadFile(filepath.Join(f.dir, "state.json"))
	if err != nil {
		f.t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *fixture) tabIDs() []string {
	f.t.Helper()
	var ids []string
	for id := range f.state().Tabs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// tokenFile writes an owner-only token file and returns its path and token.
func (f *fixture) tokenFile() (string, string) {
	f.t.Helper()
	token := "f00dfacecafebeef" + strings.Repeat("0123456789abcdef", 3)
	path := filepath.Join(f.t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return path, token
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

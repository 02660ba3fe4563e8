package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/facets-dev/facets/internal/herdrtest"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/startup"
	"github.com/facets-dev/facets/runtime/pibridge"
)

// TestPlanDaemonInProcess: run in this process, the daemon's answer to a
// plan call is byte for byte what the CLI prints, exits with and reports
// for it, whatever the call: each role, a profile, an unknown one, a
// trusted project, another protocol, a broken request, another agent dir;
// after an edit it answers from the edited files, because it keeps nothing
// between plans; and many calls leave no file open.
// TestPlanDaemonAnswersAsTheProcess compares real processes.
func TestPlanDaemonInProcess(t *testing.T) {
	agent, other, proj := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(agent, "facets", "profiles", "worker", "config.json"), `{"version":1,"name":"worker","description":"Works","tools":["read"]}`)
	writeFile(t, filepath.Join(agent, "facets", "profiles", "bad", "config.json"), `{"version":1,"name":"bad",`)
	writeFile(t, filepath.Join(agent, "facets", "MAIN.md"), "Delegate reviews.\n")
	writeFile(t, filepath.Join(other, "facets", "profiles", "elsewhere", "config.json"), `{"version":1,"name":"elsewhere","tools":["grep"]}`)
	writeFile(t, filepath.Join(proj, ".pi", "facets", "profiles", "local", "config.json"), `{"version":1,"name":"local","tools":["read"],"instructions":"Project."}`)
	runtimeDir := t.TempDir()
	envOf := func(agentDir string) map[string]string {
		return map[string]string{envvar.AgentDir: agentDir, envvar.XDGRuntimeDir: runtimeDir, envvar.Home: t.TempDir()}
	}

	sockDir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "plan.sock")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	answer := func(r pibridge.DaemonRequest) (pibridge.DaemonReply, error) { return startup.Answer(r, thisBinary()) }
	go func() {
		stopped <- pibridge.RunDaemon(ctx, pibridge.DaemonOptions{Socket: socket, Executable: exe, Idle: time.Hour, Poll: time.Hour, Run: answer})
	}()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("RunDaemon: %v", err)
		}
	}()
	request := func(env map[string]string, stdin string, args []string) pibridge.DaemonRequest {
		var environ []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			environ = append(environ, k+"="+env[k])
		}
		return pibridge.DaemonRequest{V: pibridge.DaemonRequestVersion, Args: args, Env: environ, Dir: sockDir, Stdin: stdin}
	}
	ask := func(env map[string]string, stdin string, args []string) pibridge.DaemonReply {
		t.Helper()
		r, ok := askDaemon(t, socket, request(env, stdin, args))
		if !ok {
			t.Fatalf("no answer to %q", args)
		}
		return r
	}
	// A call the extension never makes, or one whose answer depends on the
	// caller's directory, gets no answer: the extension spawns the plan.
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"bad role", envOf(agent), []string{"pi-extension", "plan", "--role", "boss"}},
		{"another flag", envOf(agent), []string{"pi-extension", "plan", "--role", "main", "--profile", "worker"}},
		{"another command", envOf(agent), []string{"check"}},
		{"relative agent dir", map[string]string{envvar.AgentDir: "agent"}, []string{"pi-extension", "plan", "--role", "main"}},
		{"relative manifest", map[string]string{envvar.AgentDir: agent, envvar.Manifest: "m.json"}, []string{"pi-extension", "plan", "--role", "main"}},
	} {
		if r, ok := askDaemon(t, socket, request(tc.env, "", tc.args)); ok {
			t.Errorf("%s: the daemon answered %+v; want no answer", tc.name, r)
		}
	}
	req := func(fields map[string]any) string {
		b, _ := json.Marshal(fields)
		return string(b)
	}
	proto := strconv.Itoa(pibridge.Protocol)
	main := []string{"pi-extension", "plan", "--role", "main", "--protocol", proto}
	cases := []struct {
		name  string
		env   map[string]string
		stdin string
		args  []string
	}{
		{"plain main", envOf(agent), req(map[string]any{"cwd": proj, "approve": false, "mainSession": "s1"}), main},
		{"profile", envOf(agent), req(map[string]any{"cwd": proj, "approve": false, "profile": "worker"}), main},
		{"unknown profile", envOf(agent), req(map[string]any{"cwd": proj, "approve": false, "profile": "nosuch"}), main},
		{"trusted project", envOf(agent), req(map[string]any{"cwd": proj, "approve": true, "profile": "local"}), main},
		{"another agent dir", envOf(other), req(map[string]any{"cwd": proj, "profile": "elsewhere"}), main},
		{"another protocol", envOf(agent), "", []string{"pi-extension", "plan", "--role", "main", "--protocol", "2"}},
		{"broken request", envOf(agent), `{"cwd":`, main},
		{"sub without a channel", envOf(agent), "", []string{"pi-extension", "plan", "--role", "sub", "--protocol", proto}},
		{"sub with a missing channel", map[string]string{envvar.Channel: filepath.Join(runtimeDir, "gone"), envvar.TokenFile: filepath.Join(runtimeDir, "token")}, "", []string{"pi-extension", "plan", "--role=sub", "--protocol=" + proto}},
		{"the extension's version", envOf(agent), req(map[string]any{"cwd": proj}), append(slices.Clone(main), "--extension-version", "v0.0.1")},
	}
	check := func() {
		t.Helper()
		for _, tc := range cases {
			code, stdout, stderr := runApp(t, tc.env, tc.stdin, tc.args...)
			got := ask(tc.env, tc.stdin, tc.args)
			if want := (pibridge.DaemonReply{Code: code, Stdout: stdout, Stderr: stderr}); got != want {
				t.Errorf("%s: the daemon answered\n%+v\nthe process\n%+v", tc.name, got, want)
			}
		}
	}
	check()
	fds := openFiles(t)
	writeFile(t, filepath.Join(agent, "facets", "profiles", "worker", "config.json"), `{"version":1,"name":"worker","description":"Works harder","tools":["grep"]}`)
	if r := ask(envOf(agent), cases[1].stdin, main); !json.Valid([]byte(r.Stdout)) || !containsAll(r.Stdout, []string{"Works harder", `"grep"`}) {
		t.Errorf("after the edit the daemon answered %s", r.Stdout)
	}
	for range 5 {
		check()
	}
	// Many Pis starting at once (a Main and its Subs): each call gets the
	// answer of its own environment and directory, none another's.
	wants := make([]pibridge.DaemonReply, len(cases))
	for i, tc := range cases {
		code, stdout, stderr := runApp(t, tc.env, tc.stdin, tc.args...)
		wants[i] = pibridge.DaemonReply{Code: code, Stdout: stdout, Stderr: stderr}
	}
	var wg sync.WaitGroup
	gots := make([]pibridge.DaemonReply, 4*len(cases))
	errs := make([]error, len(gots))
	for i := range gots {
		wg.Go(func() {
			tc := cases[i%len(cases)]
			var ok bool
			if gots[i], ok, errs[i] = tryAskDaemon(socket, request(tc.env, tc.stdin, tc.args)); errs[i] == nil && !ok {
				errs[i] = errors.New("no answer")
			}
		})
	}
	wg.Wait()
	for i, got := range gots {
		name := cases[i%len(cases)].name
		if errs[i] != nil {
			t.Errorf("concurrent %s: %v", name, errs[i])
		} else if want := wants[i%len(cases)]; got != want {
			t.Errorf("concurrent %s: the daemon answered\n%+v\nthe CLI\n%+v", name, got, want)
		}
	}
	gone := pibridge.DaemonRequest{V: pibridge.DaemonRequestVersion, Args: main, Dir: filepath.Join(t.TempDir(), "gone")}
	if r, err := answer(gone); err == nil {
		t.Errorf("a plan in a missing directory answered %+v; want no answer, so the extension spawns it", r)
	}
	// Another test's goroutine may hold a file for a moment, so wait for
	// the count to come back; a leaked one never does.
	now := openFiles(t)
	for deadline := time.Now().Add(10 * time.Second); now > fds && time.Now().Before(deadline); now = openFiles(t) {
		time.Sleep(10 * time.Millisecond)
	}
	if now > fds {
		t.Errorf("%d files open after 45 more plans, %d before", now, fds)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	writeFiles(t, filepath.Dir(path), map[string]string{filepath.Base(path): data})
}

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	des, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(des)
}

// TestPlanDaemonAnswersAsTheProcess: a daemon started as StartDaemon
// starts it (detached, with none of the caller's environment) answers
// every plan call exactly as `facets pi-extension plan` run as a process
// with the call's environment, directory and stdin: so nothing the plan
// depends on may come from the daemon's own process (its environment, its
// working directory), e.g. $TMPDIR, under which the runs of a Main live
// when $XDG_RUNTIME_DIR is unset.
func TestPlanDaemonAnswersAsTheProcess(t *testing.T) {
	facets, err := exec.LookPath("facets") // this test binary, as TestMain runs it
	if err != nil {
		t.Fatal(err)
	}
	agent, proj, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(agent, "facets", "profiles", "worker", "config.json"), `{"version":1,"name":"worker","description":"Works","tools":["read"]}`)
	writeFile(t, filepath.Join(proj, ".pi", "facets", "profiles", "local", "config.json"), `{"version":1,"name":"local","tools":["read"]}`)
	// A Main session with a run channel under $TMPDIR's runtime root: its
	// plan must start serve at once.
	if err := os.MkdirAll(filepath.Join(tmp, "pi-facets-"+strconv.Itoa(os.Geteuid()), "s-runs", "run-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(sockDir, "plan.sock")
	t.Cleanup(func() { os.RemoveAll(sockDir) }) // the daemon stops when its socket goes
	if err := pibridge.StartDaemon(facets, socket); err != nil {
		t.Fatal(err)
	}
	env := []string{envvar.AgentDir + "=" + agent, envvar.Home + "=" + t.TempDir(), "TMPDIR=" + tmp}
	req := func(fields map[string]any) string {
		b, _ := json.Marshal(fields)
		return string(b)
	}
	main := []string{"pi-extension", "plan", "--role", "main", "--protocol", strconv.Itoa(pibridge.Protocol)}
	for _, tc := range []struct {
		name, stdin string
		env, args   []string
	}{
		{"a Main with runs under TMPDIR", req(map[string]any{"cwd": proj, "mainSession": "s-runs"}), env, main},
		{"a Main without", req(map[string]any{"cwd": proj, "mainSession": "s-new"}), env, main},
		{"a profile of a trusted project", req(map[string]any{"cwd": proj, "approve": true, "profile": "local"}), env, main},
		{"an unknown profile", req(map[string]any{"cwd": proj, "profile": "nosuch"}), env, main},
		{"no agent dir, no home", req(map[string]any{"cwd": proj}), []string{}, main},
		{"the runs of a Main, under XDG_RUNTIME_DIR", req(map[string]any{"cwd": proj, "mainSession": "s-runs"}), []string{envvar.XDGRuntimeDir + "=" + tmp}, main},
		{"an API key beside", req(map[string]any{"cwd": proj, "profile": "worker"}), append(slices.Clone(env), "OPENAI_API_KEY=sk-1"), main},
	} {
		dir := filepath.Dir(agent) // where "agent" above is relative to
		cmd := exec.Command(facets, tc.args...)
		cmd.Env, cmd.Dir, cmd.Stdin = append(slices.Clone(tc.env), herdrtest.CoverEnv(t)...), dir, strings.NewReader(tc.stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		want := pibridge.DaemonReply{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
		got, ok := askDaemon(t, socket, pibridge.DaemonRequest{V: pibridge.DaemonRequestVersion, Args: tc.args, Env: tc.env, Dir: dir, Stdin: tc.stdin})
		if !ok || got != want {
			t.Errorf("%s: the daemon answered (%v)\n%+v\nthe process\n%+v", tc.name, ok, got, want)
		}
	}
}

// askDaemon sends one request to the daemon at socket, waiting for it to
// listen first (StartDaemon returns before it does); ok is false when the
// daemon closed the connection without an answer.
func askDaemon(t *testing.T, socket string, req pibridge.DaemonRequest) (pibridge.DaemonReply, bool) {
	t.Helper()
	r, ok, err := tryAskDaemon(socket, req)
	if err != nil {
		t.Fatal(err)
	}
	return r, ok
}

// tryAskDaemon is askDaemon for any goroutine: it returns its failures.
func tryAskDaemon(socket string, req pibridge.DaemonRequest) (r pibridge.DaemonReply, ok bool, err error) {
	var c net.Conn
	for i := 0; ; i++ {
		if c, err = net.Dial("unix", socket); err == nil {
			break
		}
		if i == 1000 {
			return r, false, fmt.Errorf("no daemon listens at %s: %w", socket, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer c.Close()
	b, err := json.Marshal(req)
	if err != nil {
		return r, false, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return r, false, nil
	}
	// Read to the daemon's close, not just to the newline: the daemon has
	// then closed its end, so a count of open files that follows sees no
	// connection still being torn down.
	c.SetReadDeadline(time.Now().Add(time.Minute))
	all, err := io.ReadAll(c)
	if err != nil {
		return r, false, fmt.Errorf("read the answer: %w", err)
	}
	if len(all) == 0 {
		return r, false, nil
	}
	line, rest, ok := bytes.Cut(all, []byte("\n"))
	if !ok || len(rest) != 0 {
		return r, false, fmt.Errorf("answer %q: want one line, then the daemon closes", all)
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, false, fmt.Errorf("answer %q: %w", line, err)
	}
	return r, true, nil
}

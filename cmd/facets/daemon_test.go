package main

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/pibridge"
)

// TestPlanDaemonAnswersAsAProcess: the plan daemon's answer to a plan
// call is byte for byte what `facets pi-extension plan` prints, exits with
// and reports when run on its own, whatever the call: each role, a
// profile, an unknown one, a trusted project, another protocol, a broken
// request, another agent dir; and after an edit it answers from the edited
// files, because it keeps nothing between plans. Many calls leave no file
// open.
func TestPlanDaemonAnswersAsAProcess(t *testing.T) {
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
	daemonApp := &app{getenv: func(string) string { return "" }}
	go func() {
		stopped <- pibridge.RunDaemon(ctx, pibridge.DaemonOptions{Socket: socket, Executable: exe, Idle: time.Hour, Poll: time.Hour, Run: daemonApp.planRequest})
	}()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("RunDaemon: %v", err)
		}
	}()
	ask := func(env map[string]string, stdin string, args []string) pibridge.DaemonReply {
		t.Helper()
		var c net.Conn
		for i := 0; ; i++ {
			if c, err = net.Dial("unix", socket); err == nil {
				break
			}
			if i == 500 {
				t.Fatalf("the daemon does not listen: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		defer c.Close()
		var environ []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			environ = append(environ, k+"="+env[k])
		}
		b, _ := json.Marshal(pibridge.DaemonRequest{V: pibridge.DaemonRequestVersion, Args: args, Env: environ, Dir: t.TempDir(), Stdin: stdin})
		if _, err := c.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadBytes('\n')
		if err != nil {
			t.Fatalf("no answer to %q: %v", args, err)
		}
		var r pibridge.DaemonReply
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		return r
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
		{"plain main", envOf(agent), req(map[string]any{"cwd": proj, "trust": false, "mainSession": "s1"}), main},
		{"profile", envOf(agent), req(map[string]any{"cwd": proj, "trust": false, "profile": "worker"}), main},
		{"unknown profile", envOf(agent), req(map[string]any{"cwd": proj, "trust": false, "profile": "nosuch"}), main},
		{"trusted project", envOf(agent), req(map[string]any{"cwd": proj, "trust": true, "profile": "local"}), main},
		{"another agent dir", envOf(other), req(map[string]any{"cwd": proj, "profile": "elsewhere"}), main},
		{"another protocol", envOf(agent), "", []string{"pi-extension", "plan", "--role", "main", "--protocol", "2"}},
		{"broken request", envOf(agent), `{"cwd":`, main},
		{"sub without a channel", envOf(agent), "", []string{"pi-extension", "plan", "--role", "sub", "--protocol", proto}},
		{"bad role", envOf(agent), "", []string{"pi-extension", "plan", "--role", "boss"}},
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
	gone := pibridge.DaemonRequest{V: pibridge.DaemonRequestVersion, Args: main, Dir: filepath.Join(t.TempDir(), "gone")}
	if r, err := daemonApp.planRequest(gone); err == nil {
		t.Errorf("a plan in a missing directory answered %+v; want no answer, so the extension spawns it", r)
	}
	if now := openFiles(t); now > fds {
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

package pibridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/pibridge"
)

// daemonUnderTest runs RunDaemon in the background on a socket in a fresh
// private directory; stopped tells when it has returned, with its error.
type daemonUnderTest struct {
	socket, exe string
	stopped     chan error
	cancel      context.CancelFunc
}

func startDaemon(t *testing.T, idle, poll time.Duration, run func(pibridge.DaemonRequest) (pibridge.DaemonReply, error)) *daemonUnderTest {
	t.Helper()
	return startDaemonWith(t, pibridge.DaemonOptions{Idle: idle, Poll: poll, Run: run})
}

// startDaemonWith is startDaemon with more options; Socket and Executable
// are the test's.
func startDaemonWith(t *testing.T, o pibridge.DaemonOptions) *daemonUnderTest {
	t.Helper()
	// A short directory name: a Unix socket path has at most 104 bytes on macOS.
	dir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe := filepath.Join(dir, "facets")
	writeFile(t, exe, "v1")
	d := &daemonUnderTest{socket: filepath.Join(dir, "run", "plan.sock"), exe: exe, stopped: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		o.Socket, o.Executable = d.socket, exe
		d.stopped <- pibridge.RunDaemon(ctx, o)
	}()
	t.Cleanup(func() {
		cancel()
		d.wait(t)
	})
	// Until the socket answers, nothing has been tested.
	for i := 0; ; i++ {
		if c, err := net.Dial("unix", d.socket); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-d.stopped:
			t.Fatalf("RunDaemon returned before it listened: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return d
}

// wait returns RunDaemon's error once it has returned; a daemon that never
// stops fails the test (after a minute: a hang, not a slow machine).
func (d *daemonUnderTest) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-d.stopped:
		d.stopped <- err
		return err
	case <-time.After(time.Minute):
		t.Fatal("the daemon did not stop")
		return nil
	}
}

// ask sends one request line and returns the reply, or ok=false when the
// daemon closed the connection without one.
func (d *daemonUnderTest) ask(t *testing.T, line string) (reply pibridge.DaemonReply, ok bool) {
	t.Helper()
	c, err := net.Dial("unix", d.socket)
	if err != nil {
		return reply, false
	}
	defer c.Close()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return reply, false
	}
	b, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return reply, false
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		t.Fatalf("reply %q: %v", b, err)
	}
	return reply, true
}

func request(t *testing.T, req pibridge.DaemonRequest) string {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func echo(req pibridge.DaemonRequest) (pibridge.DaemonReply, error) {
	if req.Dir == "/gone" {
		return pibridge.DaemonReply{}, errors.New("chdir /gone: no such file or directory")
	}
	return pibridge.DaemonReply{Code: len(req.Args), Stdout: strings.Join(req.Args, " ") + "|" + req.Stdin, Stderr: strings.Join(req.Env, ",")}, nil
}

func planReq(stdin string, args ...string) pibridge.DaemonRequest {
	return pibridge.DaemonRequest{V: pibridge.DaemonRequestVersion, Args: append([]string{"pi-extension", "plan"}, args...),
		Env: []string{"HOME=/h", "A=b"}, Dir: "/", Stdin: stdin}
}

func TestDaemonAnswersEachRequestAsRunDoes(t *testing.T) {
	d := startDaemon(t, time.Hour, 10*time.Millisecond, echo)
	if fi, err := os.Lstat(d.socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %v (%v), want mode 0600", fi.Mode(), err)
	}
	for _, req := range []pibridge.DaemonRequest{planReq(`{"cwd":"/w"}`, "--role", "main"), planReq("", "--role", "sub")} {
		got, ok := d.ask(t, request(t, req))
		if want, _ := echo(req); !ok || got != want {
			t.Errorf("reply %+v (ok %v), want %+v", got, ok, want)
		}
	}
}

// A request the daemon must not run gets no answer (the extension then
// spawns the plan), and the daemon goes on serving.
func TestDaemonRefusesWhatIsNotAPlan(t *testing.T) {
	var ran atomic.Int32
	d := startDaemon(t, time.Hour, 10*time.Millisecond, func(req pibridge.DaemonRequest) (pibridge.DaemonReply, error) { ran.Add(1); return echo(req) })
	other := planReq("")
	other.Args = []string{"delegate", "--profile", "x"}
	relative := planReq("")
	relative.Dir = "work"
	newer := planReq("")
	newer.V = pibridge.DaemonRequestVersion + 1
	for name, line := range map[string]string{
		"another command": request(t, other), "a relative directory": request(t, relative), "a newer request": request(t, newer),
		"not JSON": "plan please", "an unknown field": `{"v":1,"args":["pi-extension","plan"],"dir":"/","shell":"sh"}`,
		"two values": request(t, planReq("")) + request(t, planReq("")),
	} {
		if got, ok := d.ask(t, line); ok {
			t.Errorf("%s: answered %+v", name, got)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("ran %d refused requests", n)
	}
	gone := planReq("")
	gone.Dir = "/gone"
	if got, ok := d.ask(t, request(t, gone)); ok {
		t.Errorf("a request Run could not run as a process: answered %+v", got)
	}
	if _, ok := d.ask(t, request(t, planReq(""))); !ok {
		t.Error("no answer to a plan after the refusals")
	}
}

func TestDaemonStopsWhenItsSocketIsRemoved(t *testing.T) {
	d := startDaemon(t, time.Hour, 10*time.Millisecond, echo)
	if err := os.RemoveAll(filepath.Dir(d.socket)); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(t); err != nil {
		t.Errorf("RunDaemon: %v", err)
	}
}

// After an upgrade the old binary answers nothing, not even the request
// that arrives before its next poll: the daemon checks at each request.
func TestDaemonStopsWhenItsBinaryIsReplaced(t *testing.T) {
	var ran atomic.Int32
	// Polled once an hour: only the check at the request can stop it.
	d := startDaemon(t, time.Hour, time.Hour, func(req pibridge.DaemonRequest) (pibridge.DaemonReply, error) { ran.Add(1); return echo(req) })
	next := d.exe + ".new"
	writeFile(t, next, "v2")
	if err := os.Rename(next, d.exe); err != nil {
		t.Fatal(err)
	}
	if got, ok := d.ask(t, request(t, planReq(""))); ok {
		t.Errorf("the replaced binary answered %+v", got)
	}
	if err := d.wait(t); err != nil {
		t.Errorf("RunDaemon: %v", err)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the replaced binary answered %d requests", n)
	}
	if _, err := os.Lstat(d.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stopped daemon left its socket: %v", err)
	}
}

func TestDaemonStopsWhenIdle(t *testing.T) {
	d := startDaemon(t, 50*time.Millisecond, 10*time.Millisecond, echo)
	if err := d.wait(t); err != nil {
		t.Errorf("RunDaemon: %v", err)
	}
}

// A second daemon on the same socket leaves the first alone; one left
// behind by a daemon that died (a socket file, no lock) is replaced.
func TestOneDaemonPerSocket(t *testing.T) {
	d := startDaemon(t, time.Hour, 10*time.Millisecond, echo)
	err := pibridge.RunDaemon(context.Background(), pibridge.DaemonOptions{Socket: d.socket, Executable: d.exe, Idle: time.Hour, Poll: time.Second, Run: echo})
	if !errors.Is(err, pibridge.ErrDaemonRunning) {
		t.Errorf("second RunDaemon = %v, want ErrDaemonRunning", err)
	}
	if _, ok := d.ask(t, request(t, planReq(""))); !ok {
		t.Error("the first daemon stopped answering")
	}

	dir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	stale := filepath.Join(dir, "plan.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pibridge.RunDaemon(ctx, pibridge.DaemonOptions{Socket: stale, Executable: d.exe, Idle: time.Hour, Poll: 10 * time.Millisecond, Run: echo})
	}()
	var answered bool
	for i := 0; i < 500 && !answered; i++ {
		c, err := net.Dial("unix", stale)
		if err == nil {
			c.Close()
			answered = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunDaemon over a stale socket: %v", err)
	}
	if !answered {
		t.Error("the daemon never listened where a dead one left its socket")
	}
}

// Whoever reaches the socket gets plans with any environment, so its
// directory must be the user's alone.
func TestDaemonRefusesAnOpenDirectory(t *testing.T) {
	base, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	// The channel root's rule (channel.EnsureRoot), with its messages.
	for dir, want := range map[string]string{open: "grants group/other access", link: "symlink or non-directory"} {
		err := pibridge.RunDaemon(context.Background(), pibridge.DaemonOptions{Socket: filepath.Join(dir, "plan.sock"), Executable: "/bin/sh", Idle: time.Hour, Poll: time.Second, Run: echo})
		if !errors.Is(err, channel.ErrInsecure) || !strings.Contains(err.Error(), dir+": ") || !strings.Contains(err.Error(), want) {
			t.Errorf("RunDaemon in %s = %v, want ErrInsecure naming it: %q", dir, err, want)
		}
	}
}

func FuzzReadDaemonRequest(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"args":["pi-extension","plan","--role","main"],"env":["A=b"],"dir":"/","stdin":"{}"}` + "\n",
		`{"v":1,"args":["pi-extension"],"dir":"/"}`, `{"v":2}`, `{"v":1,"args":["pi-extension","plan"],"dir":"rel"}`, "\n", "",
		`{"v":1,"args":["pi-extension","plan"],"dir":"/"}{"v":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := pibridge.ReadDaemonRequest(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		if req.V != pibridge.DaemonRequestVersion || len(req.Args) < 2 || req.Args[0] != "pi-extension" || req.Args[1] != "plan" || !filepath.IsAbs(req.Dir) {
			t.Fatalf("accepted %+v from %q", req, data)
		}
	})
}

// TestDaemonSurvivesAPanickingPlan: a plan that panics gets no answer (its
// extension spawns the plan), the panic and its stack are in the log, and
// the next request is answered.
func TestDaemonSurvivesAPanickingPlan(t *testing.T) {
	var log syncBuffer
	d := startDaemonWith(t, pibridge.DaemonOptions{Idle: time.Minute, Poll: 50 * time.Millisecond, Log: &log,
		Run: func(req pibridge.DaemonRequest) (pibridge.DaemonReply, error) {
			if req.Stdin == "boom" {
				panic("a bug in a plan")
			}
			return echo(req)
		}})
	if _, ok := d.ask(t, request(t, planReq("boom"))); ok {
		t.Error("a panicking plan was answered")
	}
	if l := log.String(); !strings.Contains(l, "panicked: a bug in a plan") || !strings.Contains(l, "goroutine") {
		t.Errorf("log = %q, want the panic and its stack", l)
	}
	if r, ok := d.ask(t, request(t, planReq("next"))); !ok || !strings.Contains(r.Stdout, "|next") {
		t.Errorf("the request after a panic: %+v %v, want it answered", r, ok)
	}
}

// TestDaemonStopsOnAHungPlan: a plan that does not return within
// RequestTimeout gets no answer at that deadline (not the extension's 10 s
// wait), is logged, and the daemon stops, so later starts spawn their plan
// and start a fresh daemon.
func TestDaemonStopsOnAHungPlan(t *testing.T) {
	var log syncBuffer
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	d := startDaemonWith(t, pibridge.DaemonOptions{Idle: time.Minute, Poll: 50 * time.Millisecond, Log: &log, RequestTimeout: 200 * time.Millisecond,
		Run: func(req pibridge.DaemonRequest) (pibridge.DaemonReply, error) {
			<-release
			return echo(req)
		}})
	start := time.Now()
	if _, ok := d.ask(t, request(t, planReq("hang"))); ok {
		t.Error("a hung plan was answered")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the client waited %v for a hung plan, want about the 200ms deadline", took)
	}
	if err := d.wait(t); err != nil {
		t.Errorf("RunDaemon = %v", err)
	}
	if l := log.String(); !strings.Contains(l, "took longer than 200ms") {
		t.Errorf("log = %q, want the timeout", l)
	}
}

package pibridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/facets-dev/facets/runtime/channel"
)

// The plan daemon answers the extension's startup call (`facets pi-extension
// plan`) over a Unix socket, so a Pi start costs a connect instead of a
// process: Node forks its whole heap to spawn one, which is most of what
// facets added to Pi's startup. It answers with the function the plan
// command calls, given the caller's arguments, environment (only what a
// plan reads), working directory and stdin, so its answer is the one a
// fresh process would print; it keeps nothing between requests. The
// first Pi start after a login, an upgrade or an idle spell spawns the plan
// as before, and that process starts the daemon for the next one.

// DaemonRequestVersion is the version of DaemonRequest; a daemon closes a
// connection that speaks another, and the extension then spawns the plan.
const DaemonRequestVersion = 1

// DaemonRequest is one plan call as the extension would have made it: the
// command line (after "facets"), the environment as KEY=VALUE, the working
// directory (absolute) and what it writes on stdin.
type DaemonRequest struct {
	V     int      `json:"v"`
	Args  []string `json:"args"`
	Env   []string `json:"env"`
	Dir   string   `json:"dir"`
	Stdin string   `json:"stdin"`
}

// DaemonReply is what the plan process would have left behind: its exit
// status and output.
type DaemonReply struct {
	Code   int    `json:"code"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// maxDaemonRequestBytes bounds one request: a plan request (at most
// maxRequestBytes) plus an environment, many times over.
const maxDaemonRequestBytes = 4 << 20

// PlanArgs are the only command a daemon runs: a Pi's startup plan. The
// runtime commands stay processes of their own, because they start Subs
// and wait on them.
var planArgs = []string{"pi-extension", "plan"}

// ReadDaemonRequest reads one request line from r and checks it: the
// version, a plan command, an absolute working directory.
func ReadDaemonRequest(r io.Reader) (DaemonRequest, error) {
	var req DaemonRequest
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxDaemonRequestBytes+1), 64<<10).ReadBytes('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return req, fmt.Errorf("read the daemon request: %w", err)
	}
	if len(line) > maxDaemonRequestBytes {
		return req, fmt.Errorf("read the daemon request: more than %d bytes", maxDaemonRequestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("read the daemon request: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, errors.New("read the daemon request: more than one value on the line")
	}
	switch {
	case req.V != DaemonRequestVersion:
		return req, fmt.Errorf("daemon request version %d, want %d", req.V, DaemonRequestVersion)
	case len(req.Args) < len(planArgs) || !slices.Equal(req.Args[:len(planArgs)], planArgs):
		return req, fmt.Errorf("the daemon runs only %q, not %q", planArgs, req.Args)
	case !filepath.IsAbs(req.Dir):
		return req, fmt.Errorf("daemon request: working directory %q is not absolute", req.Dir)
	}
	return req, nil
}

// DaemonOptions configure RunDaemon.
type DaemonOptions struct {
	// Socket is the socket's path; its directory must be the user's own
	// and closed to group and others (it is created so when missing).
	Socket string
	// Executable is the binary the daemon runs as: when the file there is
	// replaced (an upgrade), the daemon stops, so a new binary answers.
	Executable string
	// Idle is how long the daemon waits for a request before it exits.
	Idle time.Duration
	// Poll is how often it checks its socket, its binary and the idle time.
	Poll time.Duration
	// Run answers one request; the daemon calls it for one request at a
	// time. An error means it cannot answer as a process would (a call the
	// extension does not make, a working directory that is gone): the
	// daemon then sends no answer, and the extension spawns the plan.
	Run func(DaemonRequest) (DaemonReply, error)
	// RequestTimeout bounds one Run (default DefaultRequestTimeout). A Run
	// that takes longer gets no answer, so its extension spawns the plan,
	// and the daemon stops: a hung one must not make later starts wait.
	RequestTimeout time.Duration
	// Log receives one line per request that failed (a panic, with its
	// stack; a timeout); when nil, RunDaemon writes them to <Socket>.log,
	// beside the socket in its private directory.
	Log io.Writer
}

// DefaultRequestTimeout is how long one plan may take in the daemon; a
// plan takes milliseconds, and the extension waits 10 s before it spawns.
const DefaultRequestTimeout = 5 * time.Second

// ErrDaemonRunning means another daemon already serves the socket.
var ErrDaemonRunning = errors.New("a plan daemon already serves this socket")

// RunDaemon serves plan requests on o.Socket until ctx ends, the daemon
// has been idle for o.Idle, its socket file is removed or replaced (a new
// install, a removed runtime directory), or its binary is replaced. A lock
// file beside the socket keeps a second daemon from taking the socket
// over; it returns ErrDaemonRunning then.
func RunDaemon(ctx context.Context, o DaemonOptions) error {
	// Whoever reaches the socket gets plans with any environment: its
	// directory is held to the channel root's rule.
	if err := channel.EnsureRoot(filepath.Dir(o.Socket)); err != nil {
		return fmt.Errorf("plan daemon: %w", err)
	}
	lock, err := os.OpenFile(o.Socket+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("plan daemon: %w", err)
	}
	defer lock.Close()
	if !takeLock(lock) {
		return ErrDaemonRunning
	}
	if o.Log == nil {
		if f, err := openDaemonLog(o.Socket); err == nil {
			defer f.Close()
			o.Log = f
		}
	}
	// Whatever sits at the socket path now is left from a daemon that died:
	// a live one would hold the lock.
	if err := os.Remove(o.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("plan daemon: %w", err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: o.Socket, Net: "unix"})
	if err != nil {
		return fmt.Errorf("plan daemon: %w", err)
	}
	// The socket is unlinked below only while it is still this daemon's:
	// after a removed directory, the path may be a newer daemon's.
	l.SetUnlinkOnClose(false)
	// The directory already keeps others out; Linux also checks the
	// socket's own mode on connect.
	if err := os.Chmod(o.Socket, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("plan daemon: %w", err)
	}
	sock, err := identify(o.Socket, false)
	if err != nil {
		l.Close()
		return fmt.Errorf("plan daemon: %w", err)
	}
	exe, err := identify(o.Executable, true)
	if err != nil {
		l.Close()
		return fmt.Errorf("plan daemon: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	d := &daemon{opts: o, listener: l, last: time.Now(), stop: stop, sock: sock, exe: exe, open: map[*net.UnixConn]bool{}, run: make(chan struct{}, 1)}
	go d.watch(ctx)
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	d.accept()
	// Connections still waiting to send (a Pi between loading the
	// extension and its session start) are closed: their extension spawns
	// the plan instead.
	d.openMu.Lock()
	for c := range d.open {
		c.Close()
	}
	d.openMu.Unlock()
	d.conns.Wait()
	if id, err := identify(o.Socket, false); err == nil && id == sock {
		os.Remove(o.Socket)
	}
	return nil
}

// lockWait is how long a new daemon waits for the lock: one that is
// stopping (its binary was replaced, and the plan of the new binary
// started this one at once) still holds it for a moment.
const lockWait = 2 * time.Second

func takeLock(f *os.File) bool {
	for deadline := time.Now().Add(lockWait); ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return true
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type daemon struct {
	opts     DaemonOptions
	listener *net.UnixListener
	conns    sync.WaitGroup
	run      chan struct{} // holds a token while a request runs: one at a time
	stop     func()
	openMu   sync.Mutex             // guards open and last
	open     map[*net.UnixConn]bool // the connections being served
	last     time.Time              // when the last of them ended
	// sock and exe are the socket and binary the daemon started with.
	sock, exe fileIdentity
}

// current reports whether the socket and the binary are still the ones the
// daemon started with.
func (d *daemon) current() bool {
	s, serr := identify(d.opts.Socket, false)
	e, eerr := identify(d.opts.Executable, true)
	return serr == nil && s == d.sock && eerr == nil && e == d.exe
}

func (d *daemon) accept() {
	for {
		c, err := d.listener.AcceptUnix()
		if err != nil {
			return // closed by watch or ctx
		}
		d.openMu.Lock()
		d.open[c] = true
		d.openMu.Unlock()
		d.conns.Add(1)
		go d.serve(c)
	}
}

// connDeadline is how long a connection may stay open: an extension
// connects when Pi loads it and writes its request at session start,
// which can be a while on a slow machine, but not this long.
const connDeadline = 2 * time.Minute

func (d *daemon) serve(c *net.UnixConn) {
	defer d.conns.Done()
	defer func() {
		d.openMu.Lock()
		delete(d.open, c)
		d.last = time.Now()
		d.openMu.Unlock()
		c.Close()
	}()
	c.SetDeadline(time.Now().Add(connDeadline))
	if uid, err := connUID(c); err != nil || uid != os.Getuid() {
		// The directory keeps others out; this is the second lock. A plan
		// carries its caller's environment and answers for its files.
		d.logf("refused a connection from uid %d (%v): the daemon answers only uid %d", uid, err, os.Getuid())
		return
	}
	req, err := ReadDaemonRequest(c)
	if err != nil {
		return // the extension spawns the plan instead
	}
	deadline := time.NewTimer(d.opts.RequestTimeout)
	defer deadline.Stop()
	select {
	case d.run <- struct{}{}:
		deadline.Reset(d.opts.RequestTimeout) // the plan's own time starts now
	case <-deadline.C:
		return // a request before this one is hung; its own timeout stops the daemon
	}
	if !d.current() {
		// Checked per request, not only by watch: after an upgrade the old
		// binary must not answer for the new one even once.
		<-d.run
		d.stop()
		return
	}
	type result struct {
		reply DaemonReply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				d.logf("plan %q in %s panicked: %v\n%s", req.Args, req.Dir, r, debug.Stack())
				done <- result{err: fmt.Errorf("plan panicked: %v", r)}
			}
			<-d.run
		}()
		reply, err := d.opts.Run(req)
		done <- result{reply, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-deadline.C:
		d.logf("plan %q in %s took longer than %v: no answer, and the daemon stops", req.Args, req.Dir, d.opts.RequestTimeout)
		d.stop()
		return
	}
	reply, err := r.reply, r.err
	if err != nil {
		return
	}
	b, err := json.Marshal(reply)
	if err != nil {
		return
	}
	c.Write(append(b, '\n'))
}

// connUID is the user id of the process that connected c.
func connUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, uerr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, uerr = peerUID(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, uerr
}

// logf writes one line to the daemon's log, if it has one.
func (d *daemon) logf(format string, args ...any) {
	if d.opts.Log != nil {
		fmt.Fprintf(d.opts.Log, "%s "+format+"\n", append([]any{time.Now().Format(time.RFC3339)}, args...)...)
	}
}

// openDaemonLog opens the log of the daemon at socket, beside it in its
// private directory (never through a symlink); a log past maxDaemonLog is
// started over.
func openDaemonLog(socket string) (*os.File, error) {
	path := socket + ".log"
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND | syscall.O_NOFOLLOW
	if st, err := os.Lstat(path); err == nil && st.Size() > maxDaemonLog {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("plan daemon log: %w", err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("plan daemon log: %s is not a regular file", path)
	}
	return f, nil
}

// maxDaemonLog caps the daemon's log: it holds failures only.
const maxDaemonLog = 1 << 20

// watch stops the daemon when it has been idle for Idle or when its
// socket or binary is no longer the one it started with.
func (d *daemon) watch(ctx context.Context) {
	t := time.NewTicker(d.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.openMu.Lock()
		idle := len(d.open) == 0 && time.Since(d.last) >= d.opts.Idle
		d.openMu.Unlock()
		if idle || !d.current() {
			d.stop()
			return
		}
	}
}

// fileIdentity tells one version of a file from another: a replaced file
// has another inode, a rewritten one another size or time.
type fileIdentity struct {
	dev, ino, size uint64
	mtime          int64
}

func identify(path string, follow bool) (fileIdentity, error) {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(path)
	if err != nil {
		return fileIdentity{}, err
	}
	id := fileIdentity{size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return id, nil
}

// DaemonArgs is the command line (after the binary) that runs a daemon.
func DaemonArgs(socket string) []string {
	return []string{"pi-extension", "daemon", "--socket", socket}
}

// StartDaemon starts exe as a plan daemon on socket, detached from the
// caller (its own session, no inherited streams), unless one answers there
// already. Best effort: without a daemon the next Pi spawns its plan again.
func StartDaemon(exe, socket string) error {
	if c, err := net.DialTimeout("unix", socket, 100*time.Millisecond); err == nil {
		c.Close()
		return nil
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("start the plan daemon: %w", err)
	}
	defer null.Close()
	p, err := os.StartProcess(exe, append([]string{exe}, DaemonArgs(socket)...), &os.ProcAttr{
		Dir:   "/",
		Env:   daemonEnv(os.Environ()),
		Files: []*os.File{null, null, null},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return fmt.Errorf("start the plan daemon: %w", err)
	}
	return p.Release()
}

// daemonEnv is the daemon's own environment: the Go runtime's settings
// only. Each request brings the environment its plan reads, so nothing of
// the Pi that happened to start the daemon (its keys, its agent dir) stays
// in it.
func daemonEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); slices.Contains([]string{"GOGC", "GOMEMLIMIT", "GODEBUG", "GOTRACEBACK"}, k) {
			out = append(out, kv)
		}
	}
	return out
}

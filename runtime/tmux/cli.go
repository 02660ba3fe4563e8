// Package tmux is the tmux surface: each Sub runs in a background window of
// the Main's tmux session, started with its exact argv and environment
// through tmux's own command line, never typed into a shell. It drives the
// tmux client program; docs/tmux.md is the user's guide.
package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/surface"
)

// RunOption is the window user option that holds the run id: a window id
// tmux reuses (in a new server, or after ours closed) never carries it.
const RunOption = "@facets_run"

// Options facets sets on a Sub's window besides RunOption, for people and
// scripts that look (tmux show-options -w).
const (
	MainOption    = "@facets_main"
	ProfileOption = "@facets_profile"
)

// CLI is the tmux adapter. It talks to the tmux server of the Main ($TMUX)
// for new windows, and to the server a run's handle names for an existing
// one.
type CLI struct {
	// Path is the tmux program ("tmux" is looked up on PATH).
	Path string
	// Pi is the program a Sub runs ("pi" is looked up on PATH).
	Pi string
	// Getenv reads $TMUX and $TMUX_PANE; Environ is the environment of the
	// tmux client processes, whose PATH the Sub gets too.
	Getenv  func(string) string
	Environ []string
	// Timeout bounds one tmux command (default 10 s).
	Timeout time.Duration

	mu        sync.Mutex
	specs     map[string]surface.TabSpec // window id → its spec, until StartAgent
	sessionID string                     // the Main's session id, once Check or CreateTab asked
}

// New is the adapter for the process whose environment getenv and environ
// give; tmuxBin overrides the tmux program.
func New(tmuxBin string, getenv func(string) string, environ []string) *CLI {
	if tmuxBin == "" {
		tmuxBin = "tmux"
	}
	return &CLI{Path: tmuxBin, Pi: "pi", Getenv: getenv, Environ: environ}
}

// Name is "tmux".
func (c *CLI) Name() string { return "tmux" }

// AgentAware is false: tmux runs the Sub's program and sees no agent. The
// Sub submits its own task and reports its state through its channel.
func (c *CLI) AgentAware() bool { return false }

// ErrNotInTmux is Check's answer outside a tmux pane.
var ErrNotInTmux = fmt.Errorf("%w: this Main does not run inside tmux ($TMUX is not set)", surface.ErrUnavailable)

// server is the socket of the Main's tmux server, from $TMUX
// ("<socket>,<pid>,<session index>").
func (c *CLI) server() (string, error) {
	t := c.Getenv(envvar.Tmux)
	socket, _, _ := strings.Cut(t, ",")
	if t == "" || !filepath.IsAbs(socket) {
		return "", ErrNotInTmux
	}
	return socket, nil
}

// Check fails unless tmux is installed and this process runs in a pane of
// a live tmux server.
func (c *CLI) Check(ctx context.Context) ([]string, error) {
	if _, err := exec.LookPath(c.Path); err != nil {
		return nil, fmt.Errorf("%w: tmux is not installed (%v); install it (apt-get install tmux, brew install tmux) and run Pi inside it", surface.ErrUnavailable, err)
	}
	_, err := c.session(ctx)
	return nil, err
}

// session is the id of the Main's tmux session ($N), where Sub windows open;
// asked of tmux once per adapter (Check, then CreateTab, in one launch).
func (c *CLI) session(ctx context.Context) (string, error) {
	socket, err := c.server()
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	known := c.sessionID
	c.mu.Unlock()
	if known != "" {
		return known, nil
	}
	args := []string{"display-message", "-p"}
	if pane := c.Getenv(envvar.TmuxPane); pane != "" {
		args = append(args, "-t", pane)
	}
	out, err := c.run(ctx, socket, append(args, "#{session_id}")...)
	if err != nil {
		return "", fmt.Errorf("tmux server %s: %w", socket, err)
	}
	id := strings.TrimSpace(out)
	if !strings.HasPrefix(id, "$") {
		return "", fmt.Errorf("tmux server %s: no session for this pane (answered %q)", socket, id)
	}
	c.mu.Lock()
	c.sessionID = id
	c.mu.Unlock()
	return id, nil
}

// CreateTab opens a background window in the Main's session (focus stays
// where it is; the user's windows are never split), named as a Herdr tab
// is ("↳ pi · TITLE", shown literally), holding a placeholder until
// StartAgent starts the Sub in it.
func (c *CLI) CreateTab(ctx context.Context, spec surface.TabSpec) (surface.Handle, error) {
	socket, err := c.server()
	if err != nil {
		return surface.Handle{}, err
	}
	session, err := c.session(ctx)
	if err != nil {
		return surface.Handle{}, err
	}
	args := []string{"new-window", "-d", "-P", "-F", "#{window_id} #{pane_id}", "-t", session + ":",
		"-n", Format("↳ pi · " + surface.NormalizeTitle(spec.Title))}
	if spec.Cwd != "" {
		args = append(args, "-c", Format(spec.Cwd))
	}
	// The placeholder: a program of two arguments, so tmux runs it without a
	// shell, that waits to be replaced.
	out, err := c.run(ctx, socket, append(args, "--", "sleep", "2147483647")...)
	if err != nil {
		return surface.Handle{}, fmt.Errorf("tmux new-window: %w", err)
	}
	window, pane, ok := strings.Cut(strings.TrimSpace(out), " ")
	if !ok || !strings.HasPrefix(window, "@") || !strings.HasPrefix(pane, "%") {
		return surface.Handle{}, fmt.Errorf("tmux new-window: unexpected answer %q", out)
	}
	h := surface.Handle{TabID: window, PaneID: pane, Socket: socket, Session: session}
	c.mu.Lock()
	if c.specs == nil {
		c.specs = map[string]surface.TabSpec{}
	}
	c.specs[window] = spec
	c.mu.Unlock()
	return h, nil
}

// ReportMetadata stores the run id, Main session and profile on the window
// as user options; RunOption is what Owned checks.
func (c *CLI) ReportMetadata(ctx context.Context, h surface.Handle, m surface.Metadata) error {
	// One tmux process for the three: ";" alone is tmux's command separator.
	var args []string
	for _, o := range [][2]string{{RunOption, m.RunID}, {MainOption, m.MainSession}, {ProfileOption, m.Profile}} {
		if args != nil {
			args = append(args, ";")
		}
		args = append(args, "set-option", "-w", "-t", h.TabID, o[0], Literal(o[1]))
	}
	if _, err := c.run(ctx, h.Socket, args...); err != nil {
		return fmt.Errorf("tmux set-option: %w", err)
	}
	return nil
}

// StartAgent replaces the placeholder with the Sub: pi and spec.Args, in
// the window's directory, with the tab's environment and the caller's PATH,
// given to tmux as arguments (nothing is typed). It returns once tmux has
// started the program; the Sub starts its task itself.
func (c *CLI) StartAgent(ctx context.Context, h surface.Handle, spec surface.AgentSpec) (surface.Handle, error) {
	c.mu.Lock()
	tab, ok := c.specs[h.TabID]
	delete(c.specs, h.TabID)
	c.mu.Unlock()
	if !ok {
		return h, fmt.Errorf("tmux: window %s was not created by this launch", h.TabID)
	}
	pi, err := exec.LookPath(c.Pi)
	if err != nil {
		return h, fmt.Errorf("tmux: cannot find Pi to start (%w)", err)
	}
	args := []string{"respawn-pane", "-k", "-t", h.PaneID}
	if tab.Cwd != "" {
		args = append(args, "-c", Format(tab.Cwd))
	}
	// The Main's PATH and Pi agent dir (neither a secret): a window gets the
	// tmux server's environment otherwise, which may be another's.
	for _, k := range []string{"PATH", envvar.AgentDir} {
		if v := c.Getenv(k); v != "" {
			args = append(args, "-e", Literal(k+"="+v))
		}
	}
	for _, v := range tab.Env {
		args = append(args, "-e", Literal(v.Name+"="+v.Value))
	}
	args = append(args, "--", Literal(pi))
	for _, a := range spec.Args {
		args = append(args, Literal(a))
	}
	if len(spec.Args) == 0 {
		return h, errors.New("tmux: a Sub needs Pi's arguments (a lone argument would run through a shell)")
	}
	if _, err := c.run(ctx, h.Socket, args...); err != nil {
		return h, fmt.Errorf("tmux respawn-pane: %w", err)
	}
	h.Agent = spec.Name
	return h, nil
}

// Prompt types nothing: the Sub submits its task itself
// (channel.Manifest.SelfStart). It is not called for a surface that is not
// AgentAware.
func (c *CLI) Prompt(ctx context.Context, h surface.Handle, text string) (surface.AgentState, error) {
	return surface.AgentState{Status: surface.StatusUnknown}, errors.New("tmux types no prompt; the Sub starts its task itself")
}

// Status is unknown: tmux sees no agent (the runtime asks the Sub's
// channel instead).
func (c *CLI) Status(ctx context.Context, h surface.Handle) (surface.Status, error) {
	return surface.StatusUnknown, errors.New("tmux reports no agent state")
}

// State is Status with sequence 0.
func (c *CLI) State(ctx context.Context, h surface.Handle) (surface.AgentState, error) {
	st, err := c.Status(ctx, h)
	return surface.AgentState{Status: st}, err
}

// Owned asks the server the handle names whether the window still carries
// runID: TabGone when the window, or the server, is gone (a new server at
// the same socket has other windows), TabUncertain when tmux gives no
// usable answer.
func (c *CLI) Owned(ctx context.Context, h surface.Handle, runID string) (surface.Existence, error) {
	if h.Socket == "" || h.TabID == "" {
		return surface.TabUncertain, errors.New("tmux: the run records no window")
	}
	out, err := c.run(ctx, h.Socket, "display-message", "-p", "-t", h.TabID, "#{window_id} #{pane_dead} #{"+RunOption+"}")
	switch {
	case isGone(err):
		return surface.TabGone, nil
	case err != nil:
		return surface.TabUncertain, err
	}
	f := strings.SplitN(strings.TrimSpace(out), " ", 3)
	// A dead pane (remain-on-exit keeps it) is a Sub that is gone.
	if len(f) != 3 || f[0] != h.TabID || f[1] != "0" || f[2] != runID {
		return surface.TabGone, nil
	}
	return surface.TabPresent, nil
}

// CloseTab kills the window; one already gone, or a server that is gone,
// counts as closed.
func (c *CLI) CloseTab(ctx context.Context, h surface.Handle) error {
	c.mu.Lock()
	delete(c.specs, h.TabID)
	c.mu.Unlock()
	if h.Socket == "" || h.TabID == "" {
		return errors.New("tmux: the run records no window to close")
	}
	_, err := c.run(ctx, h.Socket, "kill-window", "-t", h.TabID)
	if err != nil && !isGone(err) {
		return fmt.Errorf("tmux kill-window %s: %w", h.TabID, err)
	}
	return nil
}

// commandError is a tmux command that failed, with what it printed.
type commandError struct {
	args   []string
	stderr string
	err    error
}

func (e *commandError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return msg
}

func (e *commandError) Unwrap() error { return e.err }

// isGone reports whether err says the target or the whole server is gone.
func isGone(err error) bool {
	var ce *commandError
	if !errors.As(err, &ce) {
		return false
	}
	for _, s := range []string{"can't find window", "can't find pane", "no server running", "server exited", "(No such file or directory)", "(Connection refused)"} {
		if strings.Contains(ce.stderr, s) {
			return true
		}
	}
	return false
}

// run runs one tmux command against the server at socket and returns its
// stdout.
func (c *CLI) run(ctx context.Context, socket string, args ...string) (string, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Path, append([]string{"-S", socket}, args...)...)
	cmd.Env = c.Environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("tmux %s timed out after %v: %w", args[0], timeout, ctx.Err())
		}
		return stdout.String(), &commandError{args: args, stderr: stderr.String(), err: err}
	}
	return stdout.String(), nil
}

// Literal encodes s as one argument that tmux's command parser passes on
// unchanged: an argument ending in ";" is a command separator to tmux, and
// "\;" at its end stands for ";".
func Literal(s string) string {
	if strings.HasSuffix(s, ";") {
		return s[:len(s)-1] + `\;`
	}
	return s
}

// Format is Literal for an argument tmux expands as a format (a window
// name, a start directory): "#" is doubled, so "#{…}" and "#[…]" stay text.
func Format(s string) string {
	return Literal(strings.ReplaceAll(s, "#", "##"))
}

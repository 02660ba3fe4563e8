package tmux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/surfacetest"
	"github.com/facets-dev/facets/runtime/surface"
)

// server is a private tmux server for one test (never the user's), with a
// session "main" whose pane plays the Main's.
type server struct {
	socket, pane string
	t            *testing.T
}

func startServer(t *testing.T) *server {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed; these tests drive the real tmux (apt-get install -y tmux, as .ci/run does): %v", err)
	}
	// A unix socket path is short (108 bytes): not under t.TempDir.
	dir, err := os.MkdirTemp("", "ftmux")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{socket: filepath.Join(dir, "s"), t: t}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", s.socket, "kill-server").Run()
		os.RemoveAll(dir)
	})
	s.tmux("new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "--", "sleep", "1000000")
	s.pane = strings.TrimSpace(s.tmux("display-message", "-p", "-t", "main:", "#{pane_id}"))
	return s
}

func (s *server) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// cli is the adapter as a Main in s's pane has it, starting pi (a script
// that records its argv, environment and directory in dir) in its windows.
func (s *server) cli(pi string) *CLI {
	env := map[string]string{envvar.Tmux: s.socket + ",1,0", envvar.TmuxPane: s.pane, "PATH": os.Getenv("PATH")}
	c := New("", func(k string) string { return env[k] }, os.Environ())
	c.Pi = pi
	return c
}

// fakePi writes a program that records in <out>/<its first argument>.*
// its arguments (NUL-separated), the variables named FACETS_T_* and
// PI_FACETS_TOKEN_FILE, and its working directory, then waits.
func fakePi(t *testing.T) (program, out string) {
	t.Helper()
	dir := t.TempDir()
	out = filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	program = filepath.Join(dir, "pi")
	script := `#!/bin/sh
o=` + shellQuote(out) + `/"$1"
printf '%s\0' "$@" > "$o.args"
env | grep -E '^(FACETS_T_[A-Z]*|PI_FACETS_TOKEN_FILE)=' | sort > "$o.env"
pwd > "$o.cwd"
: > "$o.done"
exec sleep 100000
`
	if err := os.WriteFile(program, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return program, out
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

type record struct {
	Args []string
	Cwd  string
	Env  map[string]string
}

func waitRecord(t *testing.T, out, key string) record {
	t.Helper()
	base := filepath.Join(out, key)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(base + ".done"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Sub program never started (no %s.done)", base)
		}
	}
	read := func(ext string) string {
		data, err := os.ReadFile(base + ext)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	r := record{Args: strings.Split(strings.TrimSuffix(read(".args"), "\x00"), "\x00"), Cwd: strings.TrimSuffix(read(".cwd"), "\n"), Env: map[string]string{}}
	for _, line := range strings.Split(strings.TrimSpace(read(".env")), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			r.Env[k] = v
		}
	}
	return r
}

// open runs what launch.OpenTab runs up to the prompt: a window, its
// options, the program.
func open(ctx context.Context, c *CLI, title, cwd, runID string, env []surface.EnvVar, args []string) (surface.Handle, error) {
	h, err := c.CreateTab(ctx, surface.TabSpec{Cwd: cwd, Title: title, Env: env})
	if err != nil {
		return h, err
	}
	if err := c.ReportMetadata(ctx, h, surface.Metadata{MainSession: "main-1", RunID: runID, Profile: "worker"}); err != nil {
		return h, err
	}
	return c.StartAgent(ctx, h, surface.AgentSpec{Name: surface.AgentName(runID), Args: args})
}

// TestSubWindowIsExact: a Sub opens in a background window of the Main's
// session (the Main's window keeps the focus, nothing is split), named
// literally "↳ pi · TITLE" whatever the title holds, with its exact argv,
// environment and directory, none interpreted by tmux or a shell.
func TestSubWindowIsExact(t *testing.T) {
	s := startServer(t)
	pi, out := fakePi(t)
	c := s.cli(pi)
	ctx := context.Background()
	if _, err := c.Check(ctx); err != nil {
		t.Fatal(err)
	}
	hostile := "#{pane_id} #[fg=red]bold; $(rm -rf ~) `x` \\;"
	cwd := filepath.Join(t.TempDir(), "dir #{pane_id};")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"exact", "--append-system-prompt", "end;", "#{session_name}", "a b", "$HOME", "\\;", ";", ""}
	env := []surface.EnvVar{{Name: "FACETS_T_A", Value: "v;"}, {Name: "FACETS_T_B", Value: "#{pane_id}"}, {Name: envvar.TokenFile, Value: "/run/x/token"}}
	h, err := open(ctx, c, hostile, cwd, "run-exact", env, args)
	if err != nil {
		t.Fatal(err)
	}
	r := waitRecord(t, out, "exact")
	if !slices.Equal(r.Args, args) {
		t.Errorf("argv %q, want %q", r.Args, args)
	}
	if want := map[string]string{"FACETS_T_A": "v;", "FACETS_T_B": "#{pane_id}", envvar.TokenFile: "/run/x/token"}; fmt.Sprint(r.Env) != fmt.Sprint(want) {
		t.Errorf("env %v, want %v", r.Env, want)
	}
	if real, _ := filepath.EvalSymlinks(cwd); r.Cwd != cwd && r.Cwd != real {
		t.Errorf("cwd %q, want %q", r.Cwd, cwd)
	}
	windows := s.tmux("list-windows", "-t", "main", "-F", "#{window_id}\t#{window_active}\t#{window_panes}\t#{window_name}\t#{"+RunOption+"}")
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(windows), "\n") {
		f := strings.Split(line, "\t")
		switch {
		case f[0] == h.TabID:
			found = true
			// tmux keeps "#[" escaped as "##[" in a name, so the status line
			// shows it as text instead of applying it as a style.
			shown := strings.ReplaceAll(f[3], "##[", "#[")
			if want := "↳ pi · " + surface.NormalizeTitle(hostile); shown != want || f[1] != "0" || f[4] != "run-exact" {
				t.Errorf("Sub window %q: want name %q, inactive, run option run-exact", line, want)
			}
		case f[1] != "1" || f[2] != "1":
			t.Errorf("the Main's window %q lost the focus or was split", line)
		}
	}
	if !found {
		t.Errorf("no window %s in the Main's session:\n%s", h.TabID, windows)
	}
}

// TestOwnershipAndClose: a window is the run's while it carries the run id;
// killed by hand, reused by another window id, or on a server that is gone
// (killed, or another socket) it is gone, and closing it is a success.
func TestOwnershipAndClose(t *testing.T) {
	s := startServer(t)
	pi, out := fakePi(t)
	c := s.cli(pi)
	ctx := context.Background()
	h, err := open(ctx, c, "own", "", "run-1", nil, []string{"own", "x"})
	if err != nil {
		t.Fatal(err)
	}
	waitRecord(t, out, "own")
	owned := func(h surface.Handle, run string, want surface.Existence) {
		t.Helper()
		if got, err := c.Owned(ctx, h, run); got != want || err != nil {
			t.Errorf("Owned(%s, %s) = %v, %v; want %v", h.TabID, run, got, err, want)
		}
	}
	owned(h, "run-1", surface.TabPresent)
	owned(h, "run-2", surface.TabGone) // another run's record naming this window
	// Killed by hand.
	s.tmux("kill-window", "-t", h.TabID)
	owned(h, "run-1", surface.TabGone)
	if err := c.CloseTab(ctx, h); err != nil {
		t.Errorf("closing a window already gone: %v", err)
	}
	// A Sub that died in a window remain-on-exit keeps: gone.
	hd, err := open(ctx, c, "dead", "", "run-d", nil, []string{"dead", "x"})
	if err != nil {
		t.Fatal(err)
	}
	waitRecord(t, out, "dead")
	s.tmux("set-option", "-w", "-t", hd.TabID, "remain-on-exit", "on")
	s.tmux("respawn-pane", "-k", "-t", hd.PaneID, "--", "true", "x")
	for deadline := time.Now().Add(5 * time.Second); strings.TrimSpace(s.tmux("display-message", "-p", "-t", hd.TabID, "#{pane_dead}")) != "1"; {
		if time.Now().After(deadline) {
			t.Fatal("the pane never died")
		}
		time.Sleep(10 * time.Millisecond)
	}
	owned(hd, "run-d", surface.TabGone)
	// Closed through the adapter.
	h2, err := open(ctx, c, "two", "", "run-2", nil, []string{"two", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CloseTab(ctx, h2); err != nil {
		t.Fatal(err)
	}
	owned(h2, "run-2", surface.TabGone)
	// Another server at another socket is not ours.
	other := startServer(t)
	h3, err := open(ctx, c, "three", "", "run-3", nil, []string{"three", "x"})
	if err != nil {
		t.Fatal(err)
	}
	moved := h3
	moved.Socket = other.socket
	owned(moved, "run-3", surface.TabGone)
	// The server killed: gone, and closed without error.
	s.tmux("kill-server")
	owned(h3, "run-3", surface.TabGone)
	if err := c.CloseTab(ctx, h3); err != nil {
		t.Errorf("closing on a server that is gone: %v", err)
	}
}

// TestFourAtOnce: four Subs started at the same moment each get their own
// window with their own exact argv and environment.
func TestFourAtOnce(t *testing.T) {
	s := startServer(t)
	pi, out := fakePi(t)
	c := s.cli(pi)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() {
			key := fmt.Sprintf("sub%d", i)
			_, errs[i] = open(ctx, c, key, "", "run-"+key, []surface.EnvVar{{Name: "FACETS_T_N", Value: key}},
				[]string{key, "--task-file", strings.Repeat(key, 50)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sub%d: %v", i, err)
		}
	}
	for i := range 4 {
		key := fmt.Sprintf("sub%d", i)
		r := waitRecord(t, out, key)
		if want := []string{key, "--task-file", strings.Repeat(key, 50)}; !slices.Equal(r.Args, want) || r.Env["FACETS_T_N"] != key {
			t.Errorf("%s: argv %q env %v", key, r.Args, r.Env)
		}
	}
	if n := strings.Count(s.tmux("list-windows", "-t", "main", "-F", "#{window_id}"), "@"); n != 5 {
		t.Errorf("%d windows, want the Main's and four Subs'", n)
	}
}

// TestCheckOutsideTmux: outside tmux the adapter says so, as the surface
// that is not available.
func TestCheckOutsideTmux(t *testing.T) {
	c := New("", func(string) string { return "" }, nil)
	if _, err := c.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "$TMUX is not set") {
		t.Errorf("Check outside tmux: %v", err)
	}
	c = New(filepath.Join(t.TempDir(), "no-tmux"), func(string) string { return "" }, nil)
	if _, err := c.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "tmux is not installed") {
		t.Errorf("Check without tmux: %v", err)
	}
}

func TestLiteralAndFormat(t *testing.T) {
	for _, tc := range []struct{ in, literal, format string }{
		{"plain", "plain", "plain"},
		{"a;", `a\;`, `a\;`},
		{`a\;`, `a\\;`, `a\\;`},
		{";", `\;`, `\;`},
		{"#{x}", "#{x}", "##{x}"},
		{"#[a];", `#[a]\;`, `##[a]\;`},
	} {
		if got := Literal(tc.in); got != tc.literal {
			t.Errorf("Literal(%q) = %q, want %q", tc.in, got, tc.literal)
		}
		if got := Format(tc.in); got != tc.format {
			t.Errorf("Format(%q) = %q, want %q", tc.in, got, tc.format)
		}
	}
}

// TestSurfaceContract: the tmux adapter, against the real tmux, answers
// the contract the runtime relies on (Herdr's adapter answers the same one
// against the fake Herdr).
func TestSurfaceContract(t *testing.T) {
	surfacetest.Run(t, func(t *testing.T) surface.Surface {
		pi, _ := fakePi(t)
		return startServer(t).cli(pi)
	}, []string{"contract", "x"})
}

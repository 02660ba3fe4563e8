package herdr

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The contract suite's server: started exactly as Herdr's own CLI tests
// start theirs (tests/cli/harness.rs spawn_herdr_with_config and
// spawn_named_server, tests/support/mod.rs), for the real binary and for
// the fake alike.

// fakeSettle is how long the fake keeps a started agent launch_pending:
// long enough for the checks made meanwhile on a loaded machine, shorter
// than the real 3 s.
const fakeSettle = time.Second

// serverOptions vary one server of the suite.
type serverOptions struct {
	// shellDelay makes each new pane's shell initialize for that long
	// first: real Herdr gets a default_shell that sleeps, then execs
	// /bin/sh (tests/cli/agents.rs write_delayed_shell_and_fake_pi); the
	// fake gets shell_init_ms.
	shellDelay time.Duration
	// startupCwd, when set, is passed to the server as HERDR_STARTUP_CWD,
	// as herdr's auto-start does (src/server/autodetect.rs); the suite's
	// own servers, like Herdr's harness, leave it unset.
	startupCwd string
	// undetectedPi makes the stand-in pi a process Herdr never detects as
	// pi (tests/cli/agents.rs agent_start_timeout_releases_the_name_for_reuse:
	// `unset HERDR_AGENT; exec /bin/sleep 20`); the fake gets startup
	// "undetected".
	undetectedPi bool
	// version is the Herdr the fake answers as (fakeherdr.Version082 or
	// Version09); a real binary is the version it is.
	version string
}

// contractServer is one running `herdr server` and its private directories.
type contractServer struct {
	bin     string   // the herdr binary
	fake    bool     // bin is the fake, whose state lives in stateDir
	base    string   // everything the server writes lives under base
	runtime string   // XDG_RUNTIME_DIR
	socket  string   // HERDR_SOCKET_PATH, <runtime>/herdr.sock
	work    string   // a directory for workspaces and tabs
	piArgs  string   // file the stand-in pi appends its arguments to
	prompts string   // file the stand-in pi appends the prompts it reads to
	env     []string // the environment of the server and of each CLI call
	output  *syncBuffer
}

// syncBuffer collects a server's terminal output for failure messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// inheritedEnv is this process's environment without anything that would
// point herdr at another server or mark it as running inside a pane
// (the harness removes HERDR_ENV, HERDR_CLIENT_SOCKET_PATH and sets its
// own HERDR_SOCKET_PATH; a user running the suite inside Herdr also has
// HERDR_SESSION, HERDR_PANE_ID, ...), nor the fake's state.
func inheritedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HERDR_") || k == "FAKEHERDR_STATE" || k == "XDG_CONFIG_HOME" || k == "XDG_RUNTIME_DIR" || k == "XDG_STATE_HOME" || k == "SHELL" || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// startContractServer starts `herdr server` from bin the way Herdr's
// harness does: its own XDG_CONFIG_HOME whose config.toml says
// `onboarding = false` (in both herdr/ and herdr-dev/, since a debug build
// reads the latter: harness.rs app_dir_name; plus shell_mode and [update],
// below), its own XDG_RUNTIME_DIR,
// HERDR_SOCKET_PATH=<runtime>/herdr.sock, SHELL=/bin/sh and a PATH whose
// first entry holds the stand-in pi; the server runs in a pseudo-terminal
// of 24×80 (on Linux; elsewhere detached with null output, as
// spawn_named_server runs one). It returns once the socket accepts a
// connection (wait_for_socket). Cleanup ends that process and every herdr
// server whose XDG_RUNTIME_DIR is this one (cleanup_test_base ends servers
// that detached), then removes the directories.
func startContractServer(t *testing.T, bin string, fake bool, opts serverOptions) *contractServer {
	t.Helper()
	// A short base: a Unix socket path must stay under about 108 bytes.
	base, err := os.MkdirTemp("", "hcli-")
	if err != nil {
		t.Fatal(err)
	}
	s := &contractServer{bin: bin, fake: fake, base: base, runtime: filepath.Join(base, "runtime"),
		work: filepath.Join(base, "work"), piArgs: filepath.Join(base, "pi-args"), prompts: filepath.Join(base, "pi-prompts"), output: &syncBuffer{}}
	s.socket = filepath.Join(s.runtime, "herdr.sock")
	config, piBin, state := filepath.Join(base, "config"), filepath.Join(base, "bin"), filepath.Join(base, "fake-state")
	xdgState := filepath.Join(base, "state")
	for _, d := range []string{s.runtime, s.work, piBin, state, xdgState, filepath.Join(config, "herdr"), filepath.Join(config, "herdr-dev")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Beyond the harness's `onboarding = false`, two settings keep a
	// user's release binary where the harness's debug build is.
	// shell_mode "non_login" is what "auto" means on Linux (src/pane.rs
	// shell_mode_uses_login_shell); on macOS auto starts a login shell,
	// whose /etc/profile (path_helper) moves PATH's first entry, the
	// stand-in pi, behind /usr/local/bin, where a user's real pi would be
	// typed into the pane instead. [update]: a release build checks for updates and fetches agent
	// detection manifests in the background (src/app/mod.rs
	// auto_updates_enabled is off only in debug builds, which the harness
	// runs), so that a user's binary neither reaches the network nor
	// changes how it detects pi during the run.
	toml := "onboarding = false\n[terminal]\nshell_mode = \"non_login\"\n"
	if opts.shellDelay > 0 {
		shell := filepath.Join(piBin, "delayed-shell")
		writeScript(t, shell, fmt.Sprintf("#!/bin/sh\n/bin/sleep %.1f\nexec /bin/sh\n", opts.shellDelay.Seconds()))
		toml += fmt.Sprintf("default_shell = %q\n", shell)
	}
	toml += "[update]\nversion_check = false\nmanifest_check = false\n"
	for _, app := range []string{"herdr", "herdr-dev"} {
		if err := os.WriteFile(filepath.Join(config, app, "config.toml"), []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The stand-in pi of tests/cli/agents.rs agent_start_command_works: it
	// records its arguments, marks itself as pi with HERDR_AGENT, reports
	// idle, and for each prompt line reports working then idle and records
	// the prompt; "do not transition" and "stall" change nothing.
	report := func(state string) string {
		return fmt.Sprintf("  %q pane report-agent \"$HERDR_PANE_ID\" --source custom:fake-pi --agent pi --state %s >/dev/null\n", bin, state)
	}
	writeScript(t, filepath.Join(piBin, "pi"), fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %q\nexport HERDR_AGENT=pi\n", s.piArgs)+
		report("idle")+
		"while IFS= read -r prompt; do\n"+
		"  case \"$prompt\" in \"do not transition\"|\"stall\") continue ;; esac\n"+
		report("working")+report("idle")+
		fmt.Sprintf("  printf '%%s\\n' \"$prompt\" >> %q\n", s.prompts)+
		"done\n")
	if opts.undetectedPi {
		writeScript(t, filepath.Join(piBin, "pi"), "#!/bin/sh\nunset HERDR_AGENT\nexec /bin/sleep 20\n")
	}

	s.env = append(inheritedEnv(),
		"XDG_CONFIG_HOME="+config,
		"XDG_RUNTIME_DIR="+s.runtime,
		// Not in the harness: a release build keeps the agent detection
		// manifests it fetched and plugin state under XDG_STATE_HOME
		// (src/config/io.rs state_dir, src/detect/manifest_update.rs), so
		// the user's cache would change how pi is detected; a debug build
		// reads herdr-dev there, which only Herdr's developers have.
		"XDG_STATE_HOME="+xdgState,
		"HERDR_SOCKET_PATH="+s.socket,
		"SHELL=/bin/sh",
		"PATH="+piBin+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	if fake {
		// The fake runs no terminal: it models the managed launch's settle
		// (AGENT_START_SETTLE_DELAY, 3 s in src/app/agents.rs, before a
		// detected idle agent is interactive_ready: src/terminal/state.rs)
		// with a shorter one, and the shell's start with shell_init_ms.
		startup := ""
		if opts.undetectedPi {
			startup = "undetected"
		}
		ctl := fmt.Sprintf(`{"version":%q,"start_delay_ms":%d,"shell_init_ms":%d,"startup":%q}`, opts.version, fakeSettle.Milliseconds(), opts.shellDelay.Milliseconds(), startup)
		s.env = append(s.env, "FAKEHERDR_STATE="+state)
		if err := os.WriteFile(filepath.Join(state, "control.json"), []byte(ctl), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	server := exec.Command(bin, "server")
	server.Env = s.env
	if opts.startupCwd != "" {
		server.Env = append(slices.Clone(s.env), "HERDR_STARTUP_CWD="+opts.startupCwd)
	}
	server.Dir = s.work
	closeTerminal, err := startInTerminal(server, s.output)
	if err != nil {
		t.Fatalf("start %s server: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = server.Wait(); closeTerminal(); close(exited) }()
	t.Cleanup(func() {
		stopProcessGroup(server.Process.Pid, exited)
		terminateServersOf(bin, s.runtime)
		os.RemoveAll(base)
	})
	// wait_for_socket gives a server 5 s; a user's machine gets 30.
	for giveUp := time.Now().Add(30 * time.Second); !socketAccepts(s.socket); {
		select {
		case <-exited:
			t.Fatalf("%s server exited before its socket %s appeared: %s", bin, s.socket, s.output.String())
		case <-time.After(25 * time.Millisecond):
		}
		if d, ok := t.Deadline(); ok && time.Until(d) < 5*time.Second || time.Now().After(giveUp) {
			t.Fatalf("socket did not appear at %s: %s", s.socket, s.output.String())
		}
	}
	return s
}

func writeScript(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// socketAccepts is wait_for_socket's test: the path exists and connects.
func socketAccepts(path string) bool {
	if _, err := os.Stat(path); err != nil {
		return false
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// stopProcessGroup ends the server's process group: SIGTERM, then SIGKILL
// if it is still there after 5 s.
func stopProcessGroup(pid int, exited <-chan struct{}) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-exited:
		return
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
}

// terminateServersOf ends every herdr server process of bin whose
// XDG_RUNTIME_DIR (or, failing that, the directory of its
// HERDR_SOCKET_PATH) is runtime, as tests/support/mod.rs
// terminate_servers_for_runtime_dirs does: servers that detached from the
// one the suite started. Only processes of this suite's private runtime
// directory can match.
func terminateServersOf(bin, runtime string) {
	exe, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return // not Linux: only the started process group is ended
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || target != exe {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !bytes.Contains(append([]byte{0}, cmdline...), []byte("\x00server\x00")) {
			continue
		}
		if processRuntimeDir(pid) == runtime {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil; {
				time.Sleep(20 * time.Millisecond)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// processRuntimeDir is process_runtime_dir of tests/support/mod.rs.
func processRuntimeDir(pid int) string {
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	socket := ""
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("XDG_RUNTIME_DIR=")); ok {
			return string(v)
		}
		if v, ok := bytes.CutPrefix(kv, []byte("HERDR_SOCKET_PATH=")); ok {
			socket = string(v)
		}
	}
	if socket == "" {
		return ""
	}
	return filepath.Dir(socket)
}

// errNoTerminal is startInTerminal's answer where no pseudo-terminal can
// be opened; the server then runs detached.
var errNoTerminal = errors.New("no pseudo-terminal")

// startInTerminal starts cmd in a new session on a pseudo-terminal whose
// output goes to out, or, where none can be opened, detached with null
// stdio. The returned func closes the terminal after cmd has exited.
func startInTerminal(cmd *exec.Cmd, out *syncBuffer) (func(), error) {
	master, slave, err := openTerminal(24, 80)
	if err != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		fmt.Fprintf(out, "(%v: server runs detached with null output)\n", err)
		return func() {}, cmd.Start()
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Start()
	slave.Close()
	if err != nil {
		master.Close()
		return nil, err
	}
	// Drain the terminal so the server never blocks writing to it.
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	return func() { master.Close() }, nil
}

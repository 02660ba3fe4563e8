package herdr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/facets-dev/facets/internal/herdrtest"
)

// The contract suite: black-box checks of the herdr command line that the
// adapter relies on. By default they run against the fake; with
// FACETS_HERDR_CONTRACT=/path/to/herdr they run against that binary, which
// gets its own headless server, socket and config directory (see
// herdr/README.md, "Contract suite"). Nothing here depends on timing: waits
// poll until the test's deadline.

// contractEnv names the real herdr binary to check.
const contractEnv = "FACETS_HERDR_CONTRACT"

// contractHerdr is one herdr server under test.
type contractHerdr struct {
	t    *testing.T
	bin  string
	env  []string // the environment of a process in a Herdr pane
	real bool
	cwd  string // a directory for new tabs
}

// newContractHerdr starts the server the suite runs against.
func newContractHerdr(t *testing.T) *contractHerdr {
	t.Helper()
	bin := os.Getenv(contractEnv)
	if bin == "" {
		dir := t.TempDir()
		fake := herdrtest.New(t, fakeBinDir, dir, dir)
		return &contractHerdr{t: t, bin: filepath.Join(fakeBinDir, "herdr"), env: fake.Env, cwd: dir}
	}
	return startRealHerdr(t, bin)
}

// startRealHerdr runs `herdr server` headless with everything it writes in
// temporary directories: HERDR_SOCKET_PATH picks its API socket
// (src/session.rs active_api_socket_path), XDG_CONFIG_HOME its config and
// session state, HERDR_SESSION names the session. A `pi` script on the
// server's PATH stands in for Pi, the way Herdr's own tests do
// (tests/cli/agents.rs): it marks itself with HERDR_AGENT=pi and reports
// its state with pane report-agent. Cleanup stops the server.
func startRealHerdr(t *testing.T, bin string) *contractHerdr {
	t.Helper()
	// A short directory: Unix socket paths are limited to about 108 bytes.
	short, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	home, work, pibin := filepath.Join(short, "home"), filepath.Join(short, "work"), filepath.Join(short, "bin")
	for _, d := range []string{home, work, pibin, filepath.Join(short, "run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pi := "#!/bin/sh\nexport HERDR_AGENT=pi\n" +
		"\"$HERDR_BIN_PATH\" pane report-agent \"$HERDR_PANE_ID\" --source custom:contract-pi --agent pi --state idle >/dev/null\n" +
		"while IFS= read -r prompt; do\n" +
		"  \"$HERDR_BIN_PATH\" pane report-agent \"$HERDR_PANE_ID\" --source custom:contract-pi --agent pi --state working >/dev/null\n" +
		"  \"$HERDR_BIN_PATH\" pane report-agent \"$HERDR_PANE_ID\" --source custom:contract-pi --agent pi --state idle >/dev/null\n" +
		"done\n"
	if err := os.WriteFile(filepath.Join(pibin, "pi"), []byte(pi), 0o755); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(short, "h.sock")
	base := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(short, "config"),
		"XDG_RUNTIME_DIR=" + filepath.Join(short, "run"),
		"HERDR_SOCKET_PATH=" + socket,
		"HERDR_SESSION=facets-contract",
		"SHELL=/bin/sh",
		"PATH=" + pibin + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
	server := exec.Command(bin, "server")
	server.Env = base
	server.Dir = work
	server.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var logs bytes.Buffer
	server.Stdout, server.Stderr = &logs, &logs
	if err := server.Start(); err != nil {
		t.Fatalf("start %s server: %v", bin, err)
	}
	h := &contractHerdr{t: t, bin: bin, env: append(base, "HERDR_ENV=1", "HERDR_BIN_PATH="+bin), real: true, cwd: work}
	t.Cleanup(func() {
		stop := exec.Command(bin, "server", "stop")
		stop.Env = base
		_ = stop.Run()
		done := make(chan struct{})
		go func() { server.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-server.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	for {
		out, _, code := h.run("status", "server", "--json")
		if code == 0 && strings.Contains(out, `"running":true`) {
			break
		}
		if server.ProcessState != nil {
			t.Fatalf("herdr server exited: %s", logs.Bytes())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return h
}

// run invokes herdr and returns stdout, stderr and the exit code.
func (h *contractHerdr) run(args ...string) (string, string, int) {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Env = h.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &exit):
		return out.String(), errb.String(), exit.ExitCode()
	}
	h.t.Fatalf("herdr %s: %v", strings.Join(args, " "), err)
	return "", "", -1
}

// ok runs a command that must succeed with a {"id","result"} line and
// returns the result.
func (h *contractHerdr) ok(args ...string) map[string]any {
	h.t.Helper()
	out, errs, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("herdr %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	var env struct {
		ID     string         `json:"id"`
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil || env.Result == nil {
		h.t.Fatalf("herdr %s: stdout is not one result line: %q", strings.Join(args, " "), out)
	}
	if want := "cli:" + args[0] + ":" + args[1]; env.ID != want {
		h.t.Errorf("herdr %s: id %q, want %q", strings.Join(args, " "), env.ID, want)
	}
	return env.Result
}

// fails runs a command that must fail with herdr's error envelope on stderr
// (exit 1) carrying code.
func (h *contractHerdr) fails(code string, args ...string) {
	h.t.Helper()
	out, errs, exit := h.run(args...)
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if exit != 1 || json.Unmarshal([]byte(strings.TrimSpace(errs)), &env) != nil || env.Error.Code != code {
		h.t.Errorf("herdr %s: exit %d, stdout %q, stderr %q; want exit 1 with error code %s", strings.Join(args, " "), exit, out, errs, code)
	}
}

// usage runs a command that must be refused as a usage error (exit 2).
func (h *contractHerdr) usage(args ...string) {
	h.t.Helper()
	if _, errs, exit := h.run(args...); exit != 2 {
		h.t.Errorf("herdr %s: exit %d (%q), want 2", strings.Join(args, " "), exit, errs)
	}
}

// workspace is the first workspace of the server.
func (h *contractHerdr) workspace() string {
	h.t.Helper()
	ws, _ := h.ok("workspace", "list")["workspaces"].([]any)
	if len(ws) == 0 {
		h.t.Fatal("herdr workspace list: no workspace")
	}
	return str(ws[0], "workspace_id")
}

// newTab creates a background tab and returns its tab, pane and terminal.
func (h *contractHerdr) newTab(label string) (tab, pane, terminal string) {
	h.t.Helper()
	r := h.ok("tab", "create", "--workspace", h.workspace(), "--cwd", h.cwd, "--label", label, "--no-focus")
	return str(r["tab"], "tab_id"), str(r["root_pane"], "pane_id"), str(r["root_pane"], "terminal_id")
}

// startAgent starts the stand-in pi in pane as name.
func (h *contractHerdr) startAgent(name, pane string) map[string]any {
	h.t.Helper()
	return h.ok("agent", "start", name, "--kind", "pi", "--pane", pane, "--timeout", "30000", "--", "--no-session")
}

// eventually polls get until check accepts its result; the test deadline
// bounds it.
func (h *contractHerdr) eventually(what string, get func() map[string]any, check func(map[string]any) bool) map[string]any {
	h.t.Helper()
	for {
		if r := get(); check(r) {
			return r
		}
		if d, ok := h.t.Deadline(); ok && time.Until(d) < time.Second {
			h.t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func str(v any, key string) string {
	m, _ := v.(map[string]any)
	s, _ := m[key].(string)
	return s
}

func num(v any, key string) float64 {
	m, _ := v.(map[string]any)
	n, _ := m[key].(float64)
	return n
}

func tokensOf(v any) map[string]string {
	m, _ := v.(map[string]any)
	raw, _ := m["tokens"].(map[string]any)
	out := map[string]string{}
	for k, v := range raw {
		out[k], _ = v.(string)
	}
	return out
}

var (
	tabIDRe  = regexp.MustCompile(`^w[1-9A-Z0]+:t[1-9A-Z0]+$`)
	paneIDRe = regexp.MustCompile(`^w[1-9A-Z0]+:p[1-9A-Z0]+$`)
)

func TestContract(t *testing.T) {
	h := newContractHerdr(t)
	ctx := context.Background()

	t.Run("version and status", func(t *testing.T) {
		h.t = t
		out, _, code := h.run("--version")
		v, err := parseVersion(firstLine([]byte(out)))
		if code != 0 || err != nil || v.Less(MinVersion) {
			t.Errorf("herdr --version: exit %d %q (%v), want herdr %s or newer", code, out, err, MinVersion)
		}
		out, _, code = h.run("status", "server", "--json")
		var st struct {
			Running    bool   `json:"running"`
			Compatible *bool  `json:"compatible"`
			Socket     string `json:"socket"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || !st.Running || st.Compatible == nil || !*st.Compatible {
			t.Errorf("status server --json: exit %d %q", code, out)
		}
		h.usage("no-such-command")
	})

	t.Run("tab create, get and close", func(t *testing.T) {
		h.t = t
		tab, pane, terminal := h.newTab("contract")
		if !tabIDRe.MatchString(tab) || !paneIDRe.MatchString(pane) || !strings.HasPrefix(terminal, "term_") {
			t.Errorf("tab create: tab %q pane %q terminal %q", tab, pane, terminal)
		}
		if got := str(h.ok("tab", "get", tab)["tab"], "tab_id"); got != tab {
			t.Errorf("tab get %s: tab_id %q", tab, got)
		}
		p := h.ok("pane", "get", pane)["pane"]
		if str(p, "terminal_id") != terminal || str(p, "tab_id") != tab {
			t.Errorf("pane get %s = %v", pane, p)
		}
		if r := h.ok("tab", "close", tab); r["type"] != "ok" {
			t.Errorf("tab close: %v", r)
		}
		h.fails("tab_not_found", "tab", "get", tab)
		h.fails("tab_not_found", "tab", "close", tab)
		h.fails("pane_not_found", "pane", "get", pane)
		h.usage("tab", "get")
	})

	t.Run("metadata tokens", func(t *testing.T) {
		h.t = t
		tab, pane, _ := h.newTab("tokens")
		defer h.run("tab", "close", tab)
		report := func(tokens ...string) (string, string, int) {
			args := []string{"pane", "report-metadata", pane, "--source", "facets"}
			for _, tok := range tokens {
				args = append(args, "--token", tok)
			}
			return h.run(args...)
		}
		if out, errs, code := report("a=1", "b=2"); code != 0 || out != "" {
			t.Fatalf("report-metadata: exit %d %q %q", code, out, errs)
		}
		// A later report merges; an empty value clears; values are
		// trimmed and cut to 80 characters.
		report("c=3", "b=", "long="+strings.Repeat("x", 100), "pad=  v  ")
		want := map[string]string{"a": "1", "c": "3", "long": strings.Repeat("x", 80), "pad": "v"}
		if got := tokensOf(h.ok("pane", "get", pane)["pane"]); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tokens = %v, want %v", got, want)
		}
		h.fails("invalid_metadata_token", "pane", "report-metadata", pane, "--source", "facets", "--token", "bad.key=1")
		h.fails("invalid_metadata_token", "pane", "report-metadata", pane, "--source", "facets", "--token", strings.Repeat("k", 33)+"=1")
		many := []string{"pane", "report-metadata", pane, "--source", "facets"}
		for i := range 17 {
			many = append(many, "--token", fmt.Sprintf("k%d=v", i))
		}
		h.fails("invalid_metadata_token", many...)
		h.fails("invalid_metadata_source", "pane", "report-metadata", pane, "--source", "no spaces", "--token", "a=1")
		h.fails("pane_not_found", "pane", "report-metadata", "w1:pZZ", "--source", "facets", "--token", "a=1")
	})

	t.Run("agent start, get and prompt", func(t *testing.T) {
		h.t = t
		tab, pane, terminal := h.newTab("agent")
		defer h.run("tab", "close", tab)
		// Tokens live on the terminal: reported before agent start, they
		// are still there once the agent runs.
		if _, errs, code := h.run("pane", "report-metadata", pane, "--source", "facets", "--token", "facets_role=sub"); code != 0 {
			t.Fatalf("report-metadata: %s", errs)
		}
		r := h.startAgent("contract-a", pane)
		a := r["agent"]
		if r["type"] != "agent_started" || str(a, "pane_id") != pane || str(a, "terminal_id") != terminal || str(a, "name") != "contract-a" {
			t.Errorf("agent start: %v", r)
		}
		if argv, _ := r["argv"].([]any); len(argv) == 0 || argv[0] != "pi" {
			t.Errorf("agent start argv = %v", r["argv"])
		}
		if s := str(a, "agent_status"); s != "idle" && s != "done" {
			t.Errorf("agent start returned status %q, want idle or done", s)
		}
		if tokensOf(h.ok("pane", "get", pane)["pane"])["facets_role"] != "sub" {
			t.Error("tokens reported before agent start are gone")
		}
		got := h.ok("agent", "get", pane)["agent"]
		if str(got, "pane_id") != pane || str(got, "tab_id") != tab {
			t.Errorf("agent get %s = %v", pane, got)
		}
		// agent prompt answers with the state before its delayed Enter.
		p := h.ok("agent", "prompt", "contract-a", "--looks like a flag")
		before := num(p["agent"], "state_change_seq")
		if s := str(p["agent"], "agent_status"); s == "working" {
			t.Errorf("agent prompt answered %q; Herdr answers before pressing Enter", s)
		}
		h.eventually("the prompt to be taken up", func() map[string]any { return h.ok("agent", "get", pane) },
			func(r map[string]any) bool { return num(r["agent"], "state_change_seq") > before })

		h.fails("agent_name_taken", "agent", "start", "contract-a", "--kind", "pi", "--pane", pane)
		h.fails("empty_agent_prompt", "agent", "prompt", "contract-a", "")
		h.fails("agent_not_found", "agent", "prompt", "no-such-agent", "hi")
		h.fails("agent_not_found", "agent", "get", "no-such-agent")
		h.usage("agent", "prompt", "contract-a", "hi", "--until", "idle")
	})

	t.Run("agent start checks in order", func(t *testing.T) {
		h.t = t
		tab, pane, _ := h.newTab("checks")
		defer h.run("tab", "close", tab)
		h.usage("agent", "start", "x", "--pane", pane)
		h.usage("agent", "start", "x", "--kind", "pi")
		h.usage("agent", "start", "x", "--kind", "nope", "--pane", pane)
		h.fails("invalid_agent_name", "agent", "start", "Bad", "--kind", "pi", "--pane", "w1:pZZ", "--timeout", "1")
		h.fails("agent_pane_not_found", "agent", "start", "fine", "--kind", "pi", "--pane", "w1:pZZ", "--timeout", "1")
		h.fails("invalid_agent_timeout", "agent", "start", "fine", "--kind", "pi", "--pane", pane, "--timeout", "3000")
		h.fails("invalid_agent_argument", "agent", "start", "fine", "--kind", "pi", "--pane", "w1:pZZ", "--", "a\x01b")
	})

	t.Run("adapter", func(t *testing.T) {
		h.t = t
		getenv := func(k string) string {
			for i := len(h.env) - 1; i >= 0; i-- {
				if key, v, ok := strings.Cut(h.env[i], "="); ok && key == k {
					return v
				}
			}
			return ""
		}
		ws := h.workspace()
		cli := &CLI{Runner: ExecRunner{Path: h.bin, Env: h.env},
			Getenv: func(k string) string {
				if k == "HERDR_WORKSPACE_ID" {
					return ws
				}
				return getenv(k)
			}}
		if err := cli.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
		hd, err := cli.CreateTab(ctx, TabSpec{Cwd: h.cwd, Title: "contract"})
		if err != nil {
			t.Fatalf("CreateTab: %v", err)
		}
		defer cli.CloseTab(ctx, hd)
		if err := cli.ReportMetadata(ctx, hd, Metadata{MainSession: "m", RunID: "run-contract", Profile: "p"}); err != nil {
			t.Fatalf("ReportMetadata: %v", err)
		}
		if ex, err := cli.Owned(ctx, hd, "run-contract"); ex != TabPresent || err != nil {
			t.Errorf("Owned = %v, %v", ex, err)
		}
		if hd, err = cli.StartAgent(ctx, hd, AgentSpec{Name: "contract-b", Args: []string{"--no-session"}}); err != nil {
			t.Fatalf("StartAgent: %v", err)
		}
		st, err := cli.Prompt(ctx, hd, "hello")
		if err != nil || st.Status == StatusWorking {
			t.Errorf("Prompt = %+v, %v; want the pre-submit state", st, err)
		}
		if err := cli.CloseTab(ctx, hd); err != nil {
			t.Fatalf("CloseTab: %v", err)
		}
		if ex, err := cli.Owned(ctx, hd, "run-contract"); ex != TabGone || err != nil {
			t.Errorf("Owned after close = %v, %v", ex, err)
		}
		if err := cli.CloseTab(ctx, hd); err != nil {
			t.Errorf("second CloseTab: %v", err)
		}
	})
}

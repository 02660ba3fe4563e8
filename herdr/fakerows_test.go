package herdr

import (
	"strings"
	"testing"
	"time"

	"github.com/facets-dev/facets/internal/herdrtest"
)

// Rows of herdr/README.md's fake behaviour table that need the fake's knobs
// (the contract suite covers the rest against both fake and real herdr).

// fakeHerdr is a contractHerdr on the fake with control c.
func fakeHerdr(t *testing.T, c fakeControl) (*contractHerdr, *herdrtest.Fake) {
	t.Helper()
	dir := t.TempDir()
	fake := herdrtest.New(t, fakeBinDir, dir, dir)
	fake.SetControl(c)
	return &contractHerdr{t: t, bin: fakeBinDir + "/herdr", env: fake.Env, cwd: dir}, fake
}

// TestFakeLaunchPending: until the launch settles, agent get shows
// launch_pending and agent prompt answers agent_not_ready; agent start keeps
// waiting, and fails once its terminal is gone.
func TestFakeLaunchPending(t *testing.T) {
	h, fake := fakeHerdr(t, fakeControl{StartDelayMS: 600000})
	tab, pane, _ := h.newTab("slow")
	done := make(chan string)
	go func() {
		_, errs, _ := h.run("agent", "start", "slow", "--kind", "pi", "--pane", pane, "--timeout", "300000")
		done <- errs
	}()
	for fake.State().Panes[pane].Agent == nil {
		time.Sleep(5 * time.Millisecond)
	}
	a, _ := h.ok("agent", "get", "slow")["agent"].(map[string]any)
	if a["launch_pending"] != true || a["interactive_ready"] != nil || a["agent_status"] != "unknown" {
		t.Errorf("agent get while launching = %v, want launch_pending, not ready, unknown", a)
	}
	h.fails("agent_not_ready", "agent", "prompt", "slow", "too early")
	h.ok("tab", "close", tab)
	if errs := <-done; !strings.Contains(errs, `"agent_name_not_found"`) {
		t.Errorf("agent start after its tab closed: %q", errs)
	}
}

func TestFakeShellInitBusyIsRetried(t *testing.T) {
	h, _ := fakeHerdr(t, fakeControl{ShellInitMS: 100, StartDelayMS: 50})
	_, pane, _ := h.newTab("fresh")
	a := h.startAgent("fresh", pane)["agent"].(map[string]any)
	if a["interactive_ready"] != true || a["launch_pending"] != nil {
		t.Errorf("agent start answered before the launch settled: %v", a)
	}
}

func TestFakeStartupEndings(t *testing.T) {
	for startup, code := range map[string]string{"blocked": "agent_not_ready", "exit": "agent_start_failed"} {
		h, _ := fakeHerdr(t, fakeControl{Startup: startup})
		_, pane, _ := h.newTab(startup)
		h.fails(code, "agent", "start", "a", "--kind", "pi", "--pane", pane)
		if startup == "blocked" {
			h.fails("agent_blocked", "agent", "prompt", "a", "typed into a dialog")
		}
	}
}

func TestFakeDoneInUnseenTab(t *testing.T) {
	h, _ := fakeHerdr(t, fakeControl{})
	_, pane, _ := h.newTab("bg")
	h.startAgent("bg", pane)
	if s := str(h.ok("agent", "get", pane)["agent"], "agent_status"); s != "done" {
		t.Errorf("idle agent in a --no-focus tab: %q, want done", s)
	}
}

func TestFakeAgentExitKeepsTab(t *testing.T) {
	h, fake := fakeHerdr(t, fakeControl{})
	tab, pane, _ := h.newTab("exits")
	h.startAgent("exits", pane)
	fake.ExitAgent(pane)
	h.fails("agent_not_found", "agent", "get", pane)
	h.fails("agent_not_found", "agent", "prompt", "exits", "hello?")
	h.ok("tab", "get", tab)
	if a := h.ok("pane", "get", pane)["pane"].(map[string]any)["agent"]; a != nil {
		t.Errorf("pane get still names agent %v", a)
	}
	h.startAgent("again", pane) // the shell is free again
}

func TestFakeBase32TabIDs(t *testing.T) {
	h, _ := fakeHerdr(t, fakeControl{})
	var tab string
	for range 9 { // w1:t1 is the Main's: t2…t9, then tA
		tab, _, _ = h.newTab("n")
	}
	if tab != "w1:tA" {
		t.Errorf("tenth tab = %s, want w1:tA", tab)
	}
}

func TestFakeCloseNeedsConfirmationForLastTab(t *testing.T) {
	h, _ := fakeHerdr(t, fakeControl{ConfirmClose: true})
	tab, _, _ := h.newTab("other")
	h.ok("tab", "close", tab) // not the last tab of w1
	h.fails("confirmation_required", "tab", "close", "w1:t1")
}

// TestFakeServerWorkspaces: `herdr server` starts with no workspace unless
// HERDR_STARTUP_CWD names one (src/server/headless.rs
// seed_startup_workspace_if_empty), and after `herdr server stop` the CLI
// finds no server.
func TestFakeServerWorkspaces(t *testing.T) {
	for _, startup := range []string{"", "/tmp"} {
		bin := fakeBinDir + "/herdr"
		h := &contractHerdr{t: t, bin: bin}
		s := startContractServerWith(t, bin, startup)
		h.env = s.env
		ws, _ := h.ok("workspace", "list")["workspaces"].([]any)
		if want := map[string]int{"": 0, "/tmp": 1}[startup]; len(ws) != want {
			t.Errorf("HERDR_STARTUP_CWD=%q: %d workspaces, want %d", startup, len(ws), want)
		}
		if out, errs, code := h.run("server", "stop"); code != 0 || out != "" {
			t.Fatalf("server stop: exit %d %q %q", code, out, errs)
		}
		h.fails("server_not_running", "workspace", "list")
	}
}

// startContractServerWith starts the fake's server with HERDR_STARTUP_CWD
// set to startup (unset when empty), as herdr's auto-start passes it.
func startContractServerWith(t *testing.T, bin, startup string) *contractServer {
	t.Helper()
	return startContractServer(t, bin, true, serverOptions{startupCwd: startup})
}

// TestFakeTimeout3000IsNotRetried: herdr's CLI retries agent_pane_busy
// only for a timeout the server accepts (src/cli/agent.rs
// retryable_timeout), so --timeout 3000 on a starting shell is busy, not
// invalid_agent_timeout, while a retried start waits for the shell.
func TestFakeTimeout3000IsNotRetried(t *testing.T) {
	h, _ := fakeHerdr(t, fakeControl{ShellInitMS: 500})
	_, pane, _ := h.newTab("fresh")
	h.fails("agent_pane_busy", "agent", "start", "a", "--kind", "pi", "--pane", pane, "--timeout", "3000")
	h.startAgent("a", pane)
}

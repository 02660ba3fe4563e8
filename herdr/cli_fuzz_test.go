package herdr

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/facets-dev/facets/internal/envvar"
)

// answerRunner answers every herdr command with the same output, except
// --version, so Check gets past the version gate to the JSON answers.
type answerRunner struct{ res Result }

func (r answerRunner) Run(_ context.Context, args []string) (Result, error) {
	if len(args) == 1 && args[0] == "--version" {
		return Result{Stdout: []byte("herdr 0.8.2\n")}, nil
	}
	return r.res, nil
}

// FuzzCLIAnswers feeds what a herdr process prints (stdout, stderr, exit
// code) to every CLI adapter call that decodes an answer. No call may
// panic or return an error that is not valid UTF-8, and no garbled answer
// may count as a positive fact: a created tab has an id, a failed status
// is unknown, and a tab or pane is present only when the answer is about it
// (for Owned, with our terminal).
func FuzzCLIAnswers(f *testing.F) {
	for _, seed := range []struct {
		stdout, stderr string
		exit           int
	}{
		{`{"id":"cli:tab:create","result":{"type":"tab_created","tab":{"tab_id":"w1:t2"},"root_pane":{"pane_id":"w1:p2","terminal_id":"term-9"}}}` + "\n", "", 0},
		{`{"result":{"type":"agent_info","agent":{"pane_id":"w1:p2","tab_id":"w1:t2","agent_status":"done","state_change_seq":3}}}`, "", 0},
		{`{"result":{"type":"agent_prompted","agent":{"pane_id":"w1:p2","agent_status":"working"}}}`, "", 0},
		{`{"result":{"type":"pane_info","pane":{"pane_id":"w1:p2","tab_id":"w1:t2","terminal_id":"term-9","tokens":{"facets_run_id":"run-1"}}}}`, "", 0},
		{`{"result":{"type":"tab_info","tab":{"tab_id":"w1:t2"}}}`, "", 0},
		{`{"result":{"running":true,"version":"0.8.1","compatible":true,"socket":"/s"}}`, "", 0},
		{`{"status":"running","running":true,"version":"0.9.3","protocol":22,"capabilities":null,"compatible":true,"endpoint_compatible":true,"socket":"/s","session":null,"restart_needed":false,"server_binary_stale":false}`, "", 0},
		{`{"status":"running","running":true,"version":"0.9.9","protocol":22,"compatible":true,"socket":"/s"}`, "", 0},
		{`{"status":"running","running":true,"version":"0.9.3","protocol":22,"compatible":false,"endpoint_compatible":true,"socket":"/s"}`, "", 0},
		{"", `{"error":{"code":"tab_not_found","message":"no tab"}}`, 1},
		{"", `{"error":{"code":"pane_not_found","message":"\xff"}}`, 2},
		{`{"tab":{"id":"w1:t2"}}`, "error: boom", 1},
		{"noise\n{\"result\":null}\n", "", 0},
	} {
		f.Add([]byte(seed.stdout), []byte(seed.stderr), seed.exit)
	}
	env := map[string]string{envvar.HerdrEnv: "1", envvar.HerdrWorkspaceID: "w1", envvar.HerdrSocketPath: "/s"}
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, exit int) {
		c := &CLI{Runner: answerRunner{Result{Stdout: stdout, Stderr: stderr, ExitCode: exit}}, Getenv: func(k string) string { return env[k] }}
		ctx := context.Background()
		h := Handle{TabID: "w1:t2", PaneID: "w1:p2", Agent: "sub-1", TerminalID: "term-9", Socket: "/s"}
		valid := func(call string, err error) {
			t.Helper()
			if err != nil && !utf8.ValidString(err.Error()) {
				t.Fatalf("%s: error is not valid UTF-8: %q", call, err.Error())
			}
		}
		about := func(ids ...string) bool {
			for _, id := range ids {
				if !strings.Contains(string(stdout), id) {
					return false
				}
			}
			return true
		}

		notes, err := c.Check(ctx)
		valid("Check", err)
		// A note is one line of valid text, and only on a Check that lets
		// the launch go on.
		for _, n := range notes {
			if err != nil || n == "" || strings.Contains(n, "\n") || !utf8.ValidString(n) {
				t.Fatalf("Check = %v, notes %q", err, notes)
			}
		}
		created, err := c.CreateTab(ctx, TabSpec{Cwd: "/w", Title: "T"})
		valid("CreateTab", err)
		if err == nil && created.TabID == "" {
			t.Fatalf("CreateTab succeeded without a tab id: %+v", created)
		}
		started, err := c.StartAgent(ctx, h, AgentSpec{Name: "sub-1"})
		valid("StartAgent", err)
		if err == nil && (started.Agent != "sub-1" || !about(h.PaneID)) {
			t.Fatalf("StartAgent succeeded on an answer not about pane %s: %+v", h.PaneID, started)
		}
		st, err := c.State(ctx, h)
		valid("State", err)
		if (err != nil) != (st.Status == StatusUnknown) || (err == nil && !about(h.PaneID, h.TabID)) {
			t.Fatalf("State = %+v, %v", st, err)
		}
		pst, err := c.Prompt(ctx, h, "hello")
		valid("Prompt", err)
		if err != nil && pst.Status != StatusUnknown {
			t.Fatalf("Prompt failed but reports %+v", pst)
		}
		ex, err := c.TabExists(ctx, h.TabID)
		valid("TabExists", err)
		if ex != TabUncertain && err != nil || ex == TabPresent && !about(h.TabID) {
			t.Fatalf("TabExists = %v, %v on an answer not about %s", ex, err, h.TabID)
		}
		own, err := c.Owned(ctx, h, "run-1")
		valid("Owned", err)
		if own != TabUncertain && err != nil || own == TabPresent && !about(h.PaneID, h.TabID, h.TerminalID) {
			t.Fatalf("Owned = %v, %v on an answer not about our pane", own, err)
		}
		valid("CloseTab", c.CloseTab(ctx, h))
	})
}

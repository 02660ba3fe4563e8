package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/facets-dev/facets/herdr"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/golden"
	"github.com/facets-dev/facets/internal/herdrtest"
)

// fakeBinDir holds the fake herdr executable built once for the package.
var fakeBinDir string

func TestMain(m *testing.M) { herdrtest.Main(m, &fakeBinDir) }

// fixture is one fake Herdr session and a CLI adapter pointed at it.
type fixture struct {
	*herdrtest.Fake
	t   *testing.T
	cli *herdr.CLI
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	fake := herdrtest.New(t, fakeBinDir, dir, dir)
	return &fixture{Fake: fake, t: t, cli: &herdr.CLI{Runner: herdr.ExecRunner{Env: fake.Env}, Getenv: fake.Getenv}}
}

const testRunID = "3F2A9C1E-77B0-4D5A-9E21-0C4B8D6F1A23"

func (f *fixture) request() TabRequest {
	return TabRequest{
		RunID: testRunID,
		Title: "Review\tauth  refresh",
		Cwd:   "/repo",
		Env: []herdr.EnvVar{
			{Name: "PI_FACETS_ROLE", Value: "sub"},
			{Name: "PI_FACETS_CHANNEL", Value: "/run/user/1000/pi-facets-1000/main/run"},
		},
		TokenFile: herdrtest.TokenFile(f.t),
		Args:      []string{"--no-extensions", "-e", "/opt/facets/bridge.ts", "--no-session", "--tools", "read,talk"},
		Metadata:  herdr.Metadata{MainSession: "main-session-1", RunID: testRunID, Profile: "reviewer"},
		Prompt:    "--review the refresh flow",
	}
}

func TestLaunchOpensTabStartsAgentMarksAndPrompts(t *testing.T) {
	f := newFixture(t)
	req := f.request()
	h, err := OpenTab(context.Background(), f.cli, req)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	want := herdr.Handle{TabID: "w1:t2", PaneID: "w1:p2", Agent: "sub-3f2a9c1e-77b0-4d5a-9",
		Socket: f.Getenv("HERDR_SOCKET_PATH"), TerminalID: f.State().Panes["w1:p2"].TerminalID}
	if diff := cmp.Diff(want, h, cmpopts.IgnoreFields(herdr.Handle{}, "PromptSeq")); diff != "" {
		t.Errorf("handle (-want +got):\n%s", diff)
	}
	if want.TerminalID == "" || h.PromptSeq == nil {
		t.Errorf("handle lacks the terminal id or prompt sequence: %+v", h)
	}
	st := f.State()
	tab := st.Tabs["w1:t2"]
	if tab.Label != "↳ pi · Review auth refresh" {
		t.Errorf("tab label = %q", tab.Label)
	}
	wantEnv := map[string]string{
		"PI_FACETS_ROLE":       "sub",
		"PI_FACETS_CHANNEL":    "/run/user/1000/pi-facets-1000/main/run",
		"PI_FACETS_TOKEN_FILE": req.TokenFile,
	}
	if diff := cmp.Diff(wantEnv, tab.Env); diff != "" {
		t.Errorf("tab env (-want +got):\n%s", diff)
	}
	p := st.Panes["w1:p2"]
	wantTokens := map[string]string{
		"facets_role": "sub", "facets_main_session": "main-session-1",
		"facets_run_id": testRunID, "facets_profile": "reviewer",
	}
	if diff := cmp.Diff(wantTokens, p.Tokens); diff != "" {
		t.Errorf("pane tokens (-want +got):\n%s", diff)
	}
	if p.Source != "facets" {
		t.Errorf("metadata source = %q", p.Source)
	}
	if p.Agent == nil {
		t.Fatal("no agent in the new pane")
	}
	if diff := cmp.Diff(req.Args, p.Agent.Args); diff != "" {
		t.Errorf("pi args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{req.Prompt}, p.Agent.Prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
}

// TestLaunchArgvGolden pins every command line the adapter runs, so a change
// of flags is a visible diff to check against Herdr's contract.
func TestLaunchArgvGolden(t *testing.T) {
	f := newFixture(t)
	f.SetControl(herdrtest.Control{PromptSubmitMS: new(int)}) // Enter lands at once
	req := f.request()
	ctx := context.Background()
	if _, err := f.cli.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	h, err := OpenTab(ctx, f.cli, req)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if s, err := f.cli.Status(ctx, h); s != herdr.StatusWorking || err != nil {
		t.Fatalf("Status = %v, %v", s, err)
	}
	if e, err := f.cli.TabExists(ctx, h.TabID); e != herdr.TabPresent || err != nil {
		t.Fatalf("TabExists = %v, %v", e, err)
	}
	if err := f.cli.CloseTab(ctx, h); err != nil {
		t.Fatalf("CloseTab: %v", err)
	}
	var buf bytes.Buffer
	for _, c := range f.Calls() {
		line, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	got := strings.ReplaceAll(buf.String(), req.TokenFile, "$TOKEN_FILE")
	got = strings.ReplaceAll(got, f.Dir, "$STATE")
	golden.Check(t, filepath.Join("testdata", "tab.golden"), []byte(got))
}

func TestLaunchKeepsTokenOffCommandLines(t *testing.T) {
	f := newFixture(t)
	req := f.request()
	token, err := os.ReadFile(req.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(token))
	if _, err := OpenTab(context.Background(), f.cli, req); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	calls := f.Calls()
	if len(calls) == 0 {
		t.Fatal("no herdr calls recorded")
	}
	for _, c := range calls {
		line, _ := json.Marshal(c)
		if strings.Contains(string(line), secret) {
			t.Errorf("token appears in herdr call %s", line)
		}
	}
}

func TestLaunchRefusesSecretsAndUnsafeTokenFiles(t *testing.T) {
	f := newFixture(t)
	cases := map[string]func(*TabRequest){
		"token in env": func(r *TabRequest) {
			r.Env = append(r.Env, herdr.EnvVar{Name: envvar.Token, Value: "secret"})
		},
		"token file in env": func(r *TabRequest) {
			r.Env = append(r.Env, herdr.EnvVar{Name: envvar.TokenFile, Value: "/elsewhere"})
		},
		"no token file":       func(r *TabRequest) { r.TokenFile = "" },
		"relative token file": func(r *TabRequest) { r.TokenFile = "token" },
		"readable by others": func(r *TabRequest) {
			if err := os.Chmod(r.TokenFile, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"token file is a directory": func(r *TabRequest) { r.TokenFile = t.TempDir() },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			req := f.request()
			mutate(&req)
			if _, err := OpenTab(context.Background(), f.cli, req); err == nil {
				t.Fatal("Launch succeeded")
			}
		})
	}
	if calls := f.Calls(); len(calls) != 0 {
		t.Errorf("refused launches still ran herdr: %v", f.Commands())
	}
	_, err := f.cli.CreateTab(context.Background(), herdr.TabSpec{Cwd: "/", Env: []herdr.EnvVar{{Name: envvar.Token, Value: "x"}}})
	if !errors.Is(err, herdr.ErrSecretOnArgv) {
		t.Errorf("CreateTab with %s: err = %v, want herdr.ErrSecretOnArgv", envvar.Token, err)
	}
}

// TestLaunchRollsBackEveryStep injects each kind of failure at each step
// after the tab exists and checks the tab is closed again.
func TestLaunchRollsBackEveryStep(t *testing.T) {
	cases := []struct {
		name    string
		control herdrtest.Control
		timeout time.Duration
		errIs   error
	}{
		{name: "tab create exits 1 after creating", control: herdrtest.Control{Fail: map[string]herdrtest.Failure{
			"tab create": {Code: "tab_create_failed", AfterEffect: true}}}},
		{name: "tab create without root pane", control: herdrtest.Control{Malformed: map[string]string{"tab create": "no-pane-id"}}},
		{name: "agent start server error", control: herdrtest.Control{Fail: map[string]herdrtest.Failure{
			"agent start": {Code: "agent_pane_busy", Message: "pane w1:p2 is not at an idle shell prompt"}}}},
		{name: "agent start herdr timeout", control: herdrtest.Control{Fail: map[string]herdrtest.Failure{
			"agent start": {Code: "timeout", Message: "timed out waiting for agent startup"}}}},
		{name: "agent start usage error", control: herdrtest.Control{Fail: map[string]herdrtest.Failure{
			"agent start": {Message: "missing required --kind", Exit: 2}}}},
		{name: "agent start garbage", control: herdrtest.Control{Malformed: map[string]string{"agent start": "garbage"}}},
		{name: "agent start truncated", control: herdrtest.Control{Malformed: map[string]string{"agent start": "truncated"}}},
		{name: "agent start empty", control: herdrtest.Control{Malformed: map[string]string{"agent start": "empty"}}},
		{name: "agent start hangs", control: herdrtest.Control{Hang: []string{"agent start"}}, timeout: 300 * time.Millisecond,
			errIs: context.DeadlineExceeded},
		{name: "report-metadata fails", control: herdrtest.Control{Fail: map[string]herdrtest.Failure{
			"pane report-metadata": {Code: "metadata_token_limit"}}}},
		{name: "report-metadata hangs", control: herdrtest.Control{Hang: []string{"pane report-metadata"}}, timeout: 300 * time.Millisecond,
			errIs: context.DeadlineExceeded},
		{name: "agent blocked on a startup dialog", control: herdrtest.Control{Startup: "blocked", StartDelayMS: 20}},
		{name: "agent exits during startup", control: herdrtest.Control{Startup: "exit", StartDelayMS: 20}},
		{name: "pane has no live terminal", control: herdrtest.Control{Unavailable: []string{"w1:p2"}}},
		{name: "prompt fails", control: herdrtest.Control{Fail: map[string]herdrtest.Failure{
			"agent prompt": {Code: "agent_prompt_stalled"}}}},
		{name: "prompt garbage", control: herdrtest.Control{Malformed: map[string]string{"agent prompt": "garbage"}}},
		{name: "prompt hangs", control: herdrtest.Control{Hang: []string{"agent prompt"}}, timeout: 300 * time.Millisecond,
			errIs: context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.SetControl(tc.control)
			if tc.timeout > 0 {
				f.cli.Timeouts = herdr.Timeouts{Start: tc.timeout, Mark: tc.timeout, Prompt: tc.timeout}
			}
			h, err := OpenTab(context.Background(), f.cli, f.request())
			if err == nil {
				t.Fatal("Launch succeeded")
			}
			var ce *CleanupError
			if errors.As(err, &ce) {
				t.Fatalf("rollback failed: %v", err)
			}
			if tc.errIs != nil && !errors.Is(err, tc.errIs) {
				t.Errorf("err = %v, want it to wrap %v", err, tc.errIs)
			}
			if h != (herdr.Handle{}) {
				t.Errorf("handle after rollback = %+v, want zero", h)
			}
			if diff := cmp.Diff([]string{"w1:t1"}, f.TabIDs()); diff != "" {
				t.Errorf("tabs after rollback (-want +got):\n%s", diff)
			}
			cmds := f.Commands()
			if last := cmds[len(cmds)-1]; last != "tab close" {
				t.Errorf("last herdr call = %q, want tab close; calls: %v", last, cmds)
			}
		})
	}
}

func TestLaunchWithoutTabIDCannotRollBack(t *testing.T) {
	cases := map[string]herdrtest.Control{
		"tab create fails":      {Fail: map[string]herdrtest.Failure{"tab create": {Code: "workspace_not_found"}}},
		"tab create no tab id":  {Malformed: map[string]string{"tab create": "no-tab-id"}},
		"tab create garbage":    {Malformed: map[string]string{"tab create": "garbage"}},
		"server is not running": {Server: "not_running"},
	}
	for name, ctl := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.SetControl(ctl)
			h, err := OpenTab(context.Background(), f.cli, f.request())
			if err == nil {
				t.Fatal("Launch succeeded")
			}
			if h != (herdr.Handle{}) {
				t.Errorf("handle = %+v, want zero", h)
			}
			if diff := cmp.Diff([]string{"tab create"}, f.Commands()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
	f := newFixture(t)
	f.SetControl(herdrtest.Control{Malformed: map[string]string{"tab create": "no-tab-id"}})
	if _, err := OpenTab(context.Background(), f.cli, f.request()); !errors.Is(err, herdr.ErrTabIDMissing) {
		t.Errorf("err = %v, want herdr.ErrTabIDMissing", err)
	}
}

func TestLaunchFailedRollbackKeepsHandleForRetry(t *testing.T) {
	f := newFixture(t)
	f.SetControl(herdrtest.Control{Fail: map[string]herdrtest.Failure{
		"agent prompt": {Code: "agent_not_ready", Message: "launch pending"},
		"tab close":    {Code: "tab_close_failed", Message: "could not close"},
	}})
	_, err := OpenTab(context.Background(), f.cli, f.request())
	var ce *CleanupError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *CleanupError", err)
	}
	want := herdr.Handle{TabID: "w1:t2", PaneID: "w1:p2", Agent: "sub-3f2a9c1e-77b0-4d5a-9",
		TerminalID: f.State().Panes["w1:p2"].TerminalID, Socket: f.Getenv("HERDR_SOCKET_PATH")}
	if diff := cmp.Diff(want, ce.Handle); diff != "" {
		t.Errorf("handle (-want +got):\n%s", diff)
	}
	if !hasCode(ce.Launch, "agent_not_ready") || !hasCode(ce.Cleanup, "tab_close_failed") {
		t.Errorf("causes = %v / %v", ce.Launch, ce.Cleanup)
	}
	if !strings.Contains(err.Error(), "w1:t2") {
		t.Errorf("message %q does not name the tab", err)
	}
	if diff := cmp.Diff([]string{"w1:t1", "w1:t2"}, f.TabIDs()); diff != "" {
		t.Errorf("tabs (-want +got):\n%s", diff)
	}

	f.SetControl(herdrtest.Control{})
	if err := f.cli.CloseTab(context.Background(), ce.Handle); err != nil {
		t.Fatalf("retried CloseTab: %v", err)
	}
	if diff := cmp.Diff([]string{"w1:t1"}, f.TabIDs()); diff != "" {
		t.Errorf("tabs after retry (-want +got):\n%s", diff)
	}
}

func TestLaunchCancelledMidwayRollsBack(t *testing.T) {
	f := newFixture(t)
	f.SetControl(herdrtest.Control{Hang: []string{"agent start"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		herdrtest.WaitForFile(t, filepath.Join(f.Dir, "hanging-agent_start"))
		cancel()
	}()
	_, err := OpenTab(ctx, f.cli, f.request())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var ce *CleanupError
	if errors.As(err, &ce) {
		t.Fatalf("rollback failed: %v", err)
	}
	if diff := cmp.Diff([]string{"w1:t1"}, f.TabIDs()); diff != "" {
		t.Errorf("tabs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tab create", "pane report-metadata", "agent start", "tab close"}, f.Commands()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestLaunchAlreadyCancelledRunsNothing(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := OpenTab(ctx, f.cli, f.request()); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if calls := f.Calls(); len(calls) != 0 {
		t.Errorf("calls = %v, want none", f.Commands())
	}
}

// hasCode reports whether err is a herdr error envelope with that code.
func hasCode(err error, code string) bool {
	var ce *herdr.CommandError
	return errors.As(err, &ce) && ce.Code == code
}

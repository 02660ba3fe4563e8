package herdr

import (
	"context"
	"errors"
	"fmt"
	"github.com/facets-dev/facets/runtime/surface"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/herdrtest"
)

const testRunID = "3F2A9C1E-77B0-4D5A-9E21-0C4B8D6F1A23"

// launched returns a fixture with one Sub already launched: the adapter's
// four launch steps, run directly (the transaction with its rollback is
// runtime/launch.OpenTab).
func launched(t *testing.T) (*fixture, Handle) {
	t.Helper()
	f := newFixture(t)
	return f, launchSteps(t, f)
}

// launchSteps runs the four adapter steps on f in Herdr's order (metadata
// lives on the terminal, so it is reported before Pi starts) and keeps the
// prompt's state-change sequence as the runtime does.
func launchSteps(t *testing.T, f *fixture) Handle {
	t.Helper()
	ctx := context.Background()
	h, err := f.cli.CreateTab(ctx, TabSpec{Cwd: "/repo", Title: "Review auth refresh"})
	if err == nil {
		err = f.cli.ReportMetadata(ctx, h, Metadata{MainSession: "main-session-1", RunID: testRunID, Profile: "reviewer"})
	}
	if err == nil {
		h, err = f.cli.StartAgent(ctx, h, AgentSpec{Name: surface.AgentName(testRunID), Args: []string{"--no-session"}})
	}
	if err == nil {
		var st AgentState
		st, err = f.cli.Prompt(ctx, h, "facets kickoff")
		h.PromptSeq = &st.Seq
	}
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	return h
}

func TestStatusMapsHerdrStates(t *testing.T) {
	cases := []struct {
		reported string
		want     Status
		wantErr  bool
	}{
		{"working", StatusWorking, false},
		{"blocked", StatusBlocked, false},
		{"idle", StatusIdle, false},
		{"done", StatusIdle, false},
		{"unknown", StatusUnknown, true},
		{"sleeping", StatusUnknown, true},
	}
	for _, tc := range cases {
		t.Run(tc.reported, func(t *testing.T) {
			f, h := launched(t)
			f.SetControl(fakeControl{AgentStatus: tc.reported})
			got, err := f.cli.Status(context.Background(), h)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("Status = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// unusableAnswers are the ways herdr answers cmd without saying anything
// usable: output that does not parse or names another tab, and a server
// that is not running or speaks another protocol; more adds cmd's own.
func unusableAnswers(cmd string, more map[string]fakeControl) map[string]fakeControl {
	cases := map[string]fakeControl{
		"garbage":           {Malformed: map[string]string{cmd: "garbage"}},
		"empty":             {Malformed: map[string]string{cmd: "empty"}},
		"other tab":         {Malformed: map[string]string{cmd: "wrong-tab"}},
		"server not there":  {Server: "not_running"},
		"protocol mismatch": {Server: "incompatible"},
	}
	maps.Copy(cases, more)
	return cases
}

func TestStatusIsUnknownWhenHerdrCannotTell(t *testing.T) {
	cases := unusableAnswers("agent get", map[string]fakeControl{
		"agent get fails": {Fail: map[string]fakeFailure{"agent get": {Code: "agent_not_found"}}},
		"truncated":       {Malformed: map[string]string{"agent get": "truncated"}},
		"other pane":      {Malformed: map[string]string{"agent get": "wrong-pane"}},
	})
	for name, ctl := range cases {
		t.Run(name, func(t *testing.T) {
			f, h := launched(t)
			f.SetControl(ctl)
			got, err := f.cli.Status(context.Background(), h)
			if got != StatusUnknown || err == nil {
				t.Errorf("Status = %v, %v; want unknown with a reason", got, err)
			}
		})
	}
	t.Run("hang", func(t *testing.T) {
		f, h := launched(t)
		f.SetControl(fakeControl{Hang: []string{"agent get"}})
		f.cli.Timeouts.Status = 200 * time.Millisecond
		if got, err := f.cli.Status(context.Background(), h); got != StatusUnknown || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Status = %v, %v; want unknown after the deadline", got, err)
		}
	})
	t.Run("no pane", func(t *testing.T) {
		f := newFixture(t)
		if got, err := f.cli.Status(context.Background(), Handle{TabID: "w1:t2"}); got != StatusUnknown || err == nil {
			t.Errorf("Status = %v, %v", got, err)
		}
		if len(f.Calls()) != 0 {
			t.Errorf("ran herdr without a pane: %v", f.Commands())
		}
	})
}

func TestTabExistsIsTriState(t *testing.T) {
	ctx := context.Background()
	f, h := launched(t)
	if got, err := f.cli.TabExists(ctx, h.TabID); got != TabPresent || err != nil {
		t.Errorf("open tab: %v, %v", got, err)
	}
	if got, err := f.cli.TabExists(ctx, "w1:t9"); got != TabGone || err != nil {
		t.Errorf("missing tab: %v, %v", got, err)
	}
	uncertain := unusableAnswers("tab get", map[string]fakeControl{
		"other error": {Fail: map[string]fakeFailure{"tab get": {Code: "internal_error"}}},
		"usage error": {Fail: map[string]fakeFailure{"tab get": {Exit: 2, Message: "usage: herdr tab get <tab_id>"}}},
	})
	for name, ctl := range uncertain {
		t.Run(name, func(t *testing.T) {
			f.SetControl(ctl)
			if got, err := f.cli.TabExists(ctx, h.TabID); got != TabUncertain || err == nil {
				t.Errorf("TabExists = %v, %v; want uncertain with a reason", got, err)
			}
		})
	}
	t.Run("hang", func(t *testing.T) {
		f.SetControl(fakeControl{Hang: []string{"tab get"}})
		f.cli.Timeouts.Exists = 200 * time.Millisecond
		if got, err := f.cli.TabExists(ctx, h.TabID); got != TabUncertain || err == nil {
			t.Errorf("TabExists = %v, %v; want uncertain", got, err)
		}
	})
}

func TestCloseTab(t *testing.T) {
	ctx := context.Background()
	f, h := launched(t)
	f.SetControl(fakeControl{Fail: map[string]fakeFailure{"tab close": {Code: "confirmation_required"}}})
	err := f.cli.CloseTab(ctx, h)
	if !hasCode(err, "confirmation_required") {
		t.Fatalf("CloseTab = %v, want the confirmation_required error", err)
	}
	f.SetControl(fakeControl{})
	if err := f.cli.CloseTab(ctx, h); err != nil {
		t.Fatalf("CloseTab: %v", err)
	}
	if err := f.cli.CloseTab(ctx, h); err != nil {
		t.Errorf("closing an already closed tab: %v", err)
	}
	before := len(f.Calls())
	if err := f.cli.CloseTab(ctx, Handle{}); err != nil || len(f.Calls()) != before {
		t.Errorf("CloseTab without a tab: %v, %d new calls", err, len(f.Calls())-before)
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	t.Run("ok", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.cli.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
		want := []string{"--version", "status server"}
		if diff := cmp.Diff(want, f.Commands()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
	t.Run("minimum version", func(t *testing.T) {
		f := newFixture(t)
		f.SetControl(fakeControl{Version: MinVersion.String()})
		if _, err := f.cli.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		f := newFixture(t, "PATH="+t.TempDir())
		_, err := f.cli.Check(ctx)
		if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "https://herdr.dev") {
			t.Errorf("Check = %v, want ErrNotInstalled with guidance", err)
		}
		if _, err := f.cli.CreateTab(ctx, TabSpec{Cwd: "/repo", Title: "x"}); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("CreateTab = %v, want ErrNotInstalled", err)
		}
	})
	t.Run("explicit path missing", func(t *testing.T) {
		f := newFixture(t)
		f.cli.Runner = ExecRunner{Path: filepath.Join(t.TempDir(), "herdr"), Env: f.Env}
		if _, err := f.cli.Check(ctx); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("Check = %v, want ErrNotInstalled", err)
		}
	})
	failing := map[string]struct {
		control fakeControl
		env     []string
		errIs   error
	}{
		"too old":            {control: fakeControl{Version: "0.7.4"}, errIs: ErrTooOld},
		"0.8.1":              {control: fakeControl{Version: "0.8.1"}, errIs: ErrTooOld},
		"0.7.5":              {control: fakeControl{Version: "0.7.5"}, errIs: ErrTooOld},
		"far too old":        {control: fakeControl{Version: "0.3.0"}, errIs: ErrTooOld},
		"unreadable version": {control: fakeControl{Version: "banana"}},
		"version garbage":    {control: fakeControl{Malformed: map[string]string{"--version": "garbage"}}},
		"version fails":      {control: fakeControl{Fail: map[string]fakeFailure{"--version": {Exit: 2, Message: "unknown option"}}}},
		"server not running": {control: fakeControl{Server: "not_running"}, errIs: ErrServerNotRunning},
		"protocol mismatch":  {control: fakeControl{Server: "incompatible"}},
		"status garbage":     {control: fakeControl{Malformed: map[string]string{"status server": "garbage"}}},
		"status fails":       {control: fakeControl{Fail: map[string]fakeFailure{"status server": {Exit: 2, Message: "unknown command: status"}}}},
		"outside herdr":      {env: []string{"HERDR_ENV=", "HERDR_WORKSPACE_ID=w1"}, errIs: ErrNotInHerdr},
		"no workspace":       {env: []string{"HERDR_ENV=1", "HERDR_WORKSPACE_ID="}, errIs: ErrNotInHerdr},
		"status hangs":       {control: fakeControl{Hang: []string{"status server"}}, errIs: context.DeadlineExceeded},
	}
	for name, tc := range failing {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.env...)
			f.SetControl(tc.control)
			f.cli.Timeouts.Check = 500 * time.Millisecond
			_, err := f.cli.Check(ctx)
			if err == nil {
				t.Fatal("Check succeeded")
			}
			if tc.errIs != nil && !errors.Is(err, tc.errIs) {
				t.Errorf("Check = %v, want %v", err, tc.errIs)
			}
		})
	}
}

func TestCreateTabNeedsWorkspace(t *testing.T) {
	f := newFixture(t, "HERDR_WORKSPACE_ID=")
	if _, err := f.cli.CreateTab(context.Background(), TabSpec{Cwd: "/"}); !errors.Is(err, ErrNotInHerdr) {
		t.Errorf("CreateTab = %v, want ErrNotInHerdr", err)
	}
}

func TestExecRunnerReportsExitCodes(t *testing.T) {
	f := newFixture(t)
	res, err := f.cli.Runner.Run(context.Background(), []string{"tab", "get", "w1:t9"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 1 || !strings.Contains(string(res.Stderr), `"code":"tab_not_found"`) {
		t.Errorf("tab get of a missing tab: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	res, err = f.cli.Runner.Run(context.Background(), []string{"wait"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 2 {
		t.Errorf("unknown command: exit %d, want 2", res.ExitCode)
	}
}

func TestAgentNameAndLabel(t *testing.T) {
	if got := surface.AgentName(testRunID); got != "sub-3f2a9c1e-77b0-4d5a-9" {
		t.Errorf("AgentName = %q", got)
	}
	if got := surface.AgentName("Ä.B/C"); got != "sub-bc" {
		t.Errorf("AgentName = %q", got)
	}
	long := strings.Repeat("é", 60)
	if got := TabLabel(long); got != "↳ pi · "+strings.Repeat("é", 48) {
		t.Errorf("TabLabel(long) = %q", got)
	}
	if got := TabLabel(" \x00\n "); got != "↳ pi · delegated task" {
		t.Errorf("TabLabel(blank) = %q", got)
	}
}

func TestFakeNeedsStateDir(t *testing.T) {
	res, err := ExecRunner{Env: []string{"PATH=" + fakeBinDir}}.Run(context.Background(), []string{"--version"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 {
		t.Error("fake herdr ran without FAKEHERDR_STATE")
	}
	if _, err := os.Stat(filepath.Join(fakeBinDir, "calls.jsonl")); err == nil {
		t.Error("fake herdr wrote into its binary directory")
	}
}

// TestCheckTooOldSaysWhichAndWhy: a Herdr before 0.8.2 has every command
// Facets runs but can type a task into a startup dialog, so the refusal
// must name the version needed and the reason.
func TestCheckTooOldSaysWhichAndWhy(t *testing.T) {
	f := newFixture(t)
	f.SetControl(fakeControl{Version: "0.8.1"})
	_, err := f.cli.Check(context.Background())
	if !errors.Is(err, ErrTooOld) {
		t.Fatalf("Check = %v, want ErrTooOld", err)
	}
	for _, want := range []string{"found 0.8.1", "requires 0.8.2 or newer", "startup dialog"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %q, want it to say %q", err, want)
		}
	}
}

func TestBinaryPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name, override string
		env            map[string]string
		want           string
	}{
		{"PATH by default", "", nil, "herdr"},
		{"the pane's herdr", "", map[string]string{envvar.HerdrBinPath: "/opt/herdr/bin/herdr"}, "/opt/herdr/bin/herdr"},
		{"override wins", "/usr/local/bin/herdr-dev", map[string]string{envvar.HerdrBinPath: "/opt/herdr/bin/herdr"}, "/usr/local/bin/herdr-dev"},
		{"override without pane", "herdr-dev", nil, "herdr-dev"},
	}
	for _, tc := range cases {
		if got := BinaryPath(tc.override, env(tc.env)); got != tc.want {
			t.Errorf("%s: BinaryPath = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := BinaryPath("", nil); got != "herdr" {
		t.Errorf("BinaryPath without env = %q", got)
	}
}

// TestHerdrBinPathFindsHerdrOffPATH: inside a pane Herdr sets
// HERDR_BIN_PATH to itself, which works when herdr is not on PATH.
func TestHerdrBinPathFindsHerdrOffPATH(t *testing.T) {
	f := newFixture(t, "PATH="+t.TempDir(), envvar.HerdrBinPath+"="+filepath.Join(fakeBinDir, "herdr"))
	f.cli.Runner = ExecRunner{Path: BinaryPath("", f.Getenv), Env: f.Env}
	if _, err := f.cli.Check(context.Background()); err != nil {
		t.Fatalf("Check with herdr only at $HERDR_BIN_PATH: %v", err)
	}
}

func TestMetadataTokens(t *testing.T) {
	m := Metadata{MainSession: "main-1", RunID: "run-1", Profile: "reviewer"}
	want := []Token{{"facets_role", "sub"}, {"facets_main_session", "main-1"}, {"facets_run_id", "run-1"}, {"facets_profile", "reviewer"}}
	if diff := cmp.Diff(want, Tokens(m)); diff != "" {
		t.Errorf("Tokens (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Token{{"facets_role", "sub"}, {"facets_run_id", "run-1"}}, Tokens(Metadata{RunID: "run-1"})); diff != "" {
		t.Errorf("empty values must be left out (-want +got):\n%s", diff)
	}
	many := make([]Token, 17)
	for i := range many {
		many[i] = Token{fmt.Sprintf("k%d", i), "v"}
	}
	bad := map[string][]Token{
		"17 tokens":       many,
		"key with a dot":  {{"facets.role", "sub"}},
		"key too long":    {{strings.Repeat("k", 33), "v"}},
		"empty key":       {{"", "v"}},
		"empty value":     {{"k", ""}},
		"81 characters":   {{"k", strings.Repeat("é", 81)}},
		"padded value":    {{"k", " v"}},
		"control in text": {{"k", "a\nb"}},
	}
	for name, tokens := range bad {
		if err := checkTokens(tokens); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := checkTokens(append(many[:16:16], Token{})[:16]); err != nil {
		t.Errorf("16 tokens refused: %v", err)
	}
	if err := checkTokens([]Token{{strings.Repeat("K", 32), strings.Repeat("é", 80)}}); err != nil {
		t.Errorf("limits refused: %v", err)
	}
}

// TestReportMetadataNeverSendsAnEmptyValue: Herdr reads an empty value as
// "clear", and cuts values at 80 characters.
func TestReportMetadataNeverSendsAnEmptyValue(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h, err := f.cli.CreateTab(ctx, TabSpec{Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cli.ReportMetadata(ctx, h, Metadata{RunID: "run-1", Profile: "p"}); err != nil {
		t.Fatalf("ReportMetadata: %v", err)
	}
	calls := f.Calls()
	for _, a := range calls[len(calls)-1].Argv {
		if strings.HasSuffix(a, "=") {
			t.Errorf("empty token sent: %q", a)
		}
	}
	if diff := cmp.Diff(map[string]string{"facets_role": "sub", "facets_run_id": "run-1", "facets_profile": "p"}, f.State().Panes[h.PaneID].Tokens); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	before := len(f.Calls())
	err = f.cli.ReportMetadata(ctx, h, Metadata{RunID: "run-1", Profile: strings.Repeat("p", 81)})
	if err == nil || !strings.Contains(err.Error(), "80") {
		t.Errorf("81-character token: %v", err)
	}
	if len(f.Calls()) != before {
		t.Error("an over-long token was sent to herdr")
	}
}

// TestPromptAnswersBeforeEnter: herdr answers agent prompt before it
// presses Enter, so the agent is still idle then; its state-change
// sequence only advances once the prompt is taken up.
func TestPromptAnswersBeforeEnter(t *testing.T) {
	f := newFixture(t)
	f.SetControl(fakeControl{PromptSubmitMS: herdrtest.Never()})
	ctx := context.Background()
	h := launchSteps(t, f)
	st, err := f.cli.State(ctx, h)
	if err != nil || st.Status != StatusIdle {
		t.Fatalf("State right after the prompt = %+v, %v; want idle", st, err)
	}
	if h.PromptSeq == nil || *h.PromptSeq != st.Seq {
		t.Errorf("PromptSeq = %v, want the unchanged sequence %d", h.PromptSeq, st.Seq)
	}
	f.SetControl(fakeControl{PromptSubmitMS: new(int)})
	if _, err := f.cli.Prompt(ctx, h, "again"); err != nil {
		t.Fatal(err)
	}
	st2, err := f.cli.State(ctx, h)
	if err != nil || st2.Status != StatusWorking || st2.Seq <= st.Seq {
		t.Errorf("State after Enter = %+v, %v; want working with a later sequence than %d", st2, err, st.Seq)
	}
}

func TestPromptRefusesLongText(t *testing.T) {
	f := newFixture(t)
	before := len(f.Calls())
	_, err := f.cli.Prompt(context.Background(), Handle{Agent: "sub-x"}, strings.Repeat("x", MaxPromptBytes+1))
	if !errors.Is(err, ErrSecretOnArgv) || len(f.Calls()) != before {
		t.Errorf("Prompt of %d bytes = %v (%d calls)", MaxPromptBytes+1, err, len(f.Calls())-before)
	}
}

// TestOwnedAfterServerRestart: a fresh server reuses w1:t2 for an
// unrelated tab; the stored handle must not be taken for it.
func TestOwnedAfterServerRestart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h := launchSteps(t, f)
	if ex, err := f.cli.Owned(ctx, h, testRunID); ex != TabPresent || err != nil {
		t.Fatalf("Owned after launch = %v, %v", ex, err)
	}
	noTerm := h
	noTerm.TerminalID = ""
	if ex, err := f.cli.Owned(ctx, noTerm, testRunID); ex != TabPresent || err != nil {
		t.Errorf("Owned by run-id token = %v, %v", ex, err)
	}
	if ex, _ := f.cli.Owned(ctx, noTerm, "another-run"); ex != TabGone {
		t.Errorf("Owned with another run's id = %v, want gone", ex)
	}
	other := h
	other.Socket = "/elsewhere/herdr.sock"
	if ex, _ := f.cli.Owned(ctx, other, testRunID); ex != TabGone {
		t.Errorf("Owned on another server = %v, want gone", ex)
	}
	outside := &CLI{Runner: f.cli.Runner, Getenv: func(string) string { return "" }}
	if ex, err := outside.Owned(ctx, h, testRunID); ex != TabUncertain || err == nil || !strings.Contains(err.Error(), h.Socket) {
		t.Errorf("Owned from outside any Herdr pane = %v, %v; want uncertain naming the server", ex, err)
	}

	f.Restart()
	if ex, _ := f.cli.Owned(ctx, h, testRunID); ex != TabGone {
		t.Errorf("Owned after restart without the pane = %v, want gone", ex)
	}
	f.Run("tab", "create", "--workspace", "w1", "--cwd", "/", "--label", "user's tab", "--no-focus")
	if ids := f.TabIDs(); !slices.Contains(ids, h.TabID) {
		t.Fatalf("the restarted fake did not reuse %s: %v", h.TabID, ids)
	}
	if ex, err := f.cli.Owned(ctx, h, testRunID); ex != TabGone || err != nil {
		t.Errorf("Owned of the unrelated tab at %s = %v, %v; want gone", h.TabID, ex, err)
	}
	if ex, err := f.cli.Owned(ctx, noTerm, testRunID); ex != TabGone || err != nil {
		t.Errorf("Owned (token) of the unrelated tab = %v, %v; want gone", ex, err)
	}
}

// TestExecRunnerReadsOnlyTheEnvItIsGiven: the command layer resolves the
// environment and passes it, so a herdr on this process's PATH but not on
// Env's is not found, and the child gets Env and nothing else.
func TestExecRunnerReadsOnlyTheEnvItIsGiven(t *testing.T) {
	t.Setenv("PATH", fakeBinDir)
	t.Setenv("FAKEHERDR_STATE", t.TempDir())
	for name, env := range map[string][]string{"nil": nil, "no PATH": {"HOME=/nonexistent"}} {
		if _, err := (ExecRunner{Env: env}).Run(context.Background(), []string{"--version"}); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("%s Env: err = %v, want ErrNotInstalled although herdr is on this process's PATH", name, err)
		}
	}
	// A path with a slash needs no PATH; with a nil Env the fake does not
	// see this process's FAKEHERDR_STATE either.
	res, err := ExecRunner{Path: filepath.Join(fakeBinDir, "herdr")}.Run(context.Background(), []string{"--version"})
	if err != nil || res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "FAKEHERDR_STATE is not set") {
		t.Errorf("nil Env inherited this process's environment: %+v, %v", res, err)
	}
}

// TestStartAgentLaunchPending: Herdr issue 3853, a Pi that is idle by its
// lifecycle integration yet stays launch_pending. Whether herdr's own wait
// ends in timeout or herdr gives no answer within the adapter's limit, the
// error names that state and the timeout, and StartAgent returns.
func TestStartAgentLaunchPending(t *testing.T) {
	for name, timeouts := range map[string]Timeouts{
		"herdr's timeout":       {Ready: 3001 * time.Millisecond},
		"the adapter's timeout": {Ready: 60 * time.Second, Start: 500 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.SetControl(fakeControl{Startup: "pending"})
			f.cli.Timeouts = timeouts
			ctx := context.Background()
			h, err := f.cli.CreateTab(ctx, TabSpec{Cwd: t.TempDir(), Title: "pending"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.cli.StartAgent(ctx, h, AgentSpec{Name: surface.AgentName(testRunID)})
			msg := fmt.Sprint(err)
			if !errors.Is(err, ErrLaunchPending) || !strings.Contains(msg, "launch_pending") || !strings.Contains(msg, timeouts.Ready.String()) || !strings.Contains(msg, "3853") {
				t.Errorf("StartAgent = %v; want ErrLaunchPending naming launch_pending, the %s timeout and Herdr issue 3853", err, timeouts.Ready)
			}
			// Herdr drops the launch at its deadline, before herdr's CLI
			// answers timeout (wait_for_named_agent's last agent get):
			// afterwards the pane shows neither launch_pending nor
			// interactive_ready, and the name is free.
			if timeouts.Start == 0 {
				if out := f.Run("agent", "get", h.PaneID); strings.Contains(out, "launch_pending") || strings.Contains(out, "interactive_ready") || strings.Contains(out, `"name"`) {
					t.Errorf("agent get after herdr's timeout = %s; want the launch dropped", out)
				}
			}
		})
	}
}

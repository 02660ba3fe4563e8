package herdr

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testRunID = "3F2A9C1E-77B0-4D5A-9E21-0C4B8D6F1A23"

// launched returns a fixture with one Sub already launched: the adapter's
// four launch steps, run directly (the transaction with its rollback is
// runtime/launch.OpenTab).
func launched(t *testing.T) (*fixture, Handle) {
	t.Helper()
	f := newFixture(t)
	ctx := context.Background()
	h, err := f.cli.CreateTab(ctx, TabSpec{Cwd: "/repo", Title: "Review auth refresh"})
	if err == nil {
		h, err = f.cli.StartAgent(ctx, h, AgentSpec{Name: AgentName(testRunID), Args: []string{"--no-session"}})
	}
	if err == nil {
		err = f.cli.ReportMetadata(ctx, h, Metadata{MainSession: "main-session-1", RunID: testRunID, Profile: "reviewer"})
	}
	if err == nil {
		err = f.cli.Prompt(ctx, h, "--review the refresh flow")
	}
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	return f, h
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

func TestStatusIsUnknownWhenHerdrCannotTell(t *testing.T) {
	cases := map[string]fakeControl{
		"agent get fails":   {Fail: map[string]fakeFailure{"agent get": {Code: "agent_not_found"}}},
		"garbage":           {Malformed: map[string]string{"agent get": "garbage"}},
		"empty":             {Malformed: map[string]string{"agent get": "empty"}},
		"truncated":         {Malformed: map[string]string{"agent get": "truncated"}},
		"other pane":        {Malformed: map[string]string{"agent get": "wrong-pane"}},
		"other tab":         {Malformed: map[string]string{"agent get": "wrong-tab"}},
		"server not there":  {Server: "not_running"},
		"protocol mismatch": {Server: "incompatible"},
	}
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
	uncertain := map[string]fakeControl{
		"other error":       {Fail: map[string]fakeFailure{"tab get": {Code: "internal_error"}}},
		"usage error":       {Fail: map[string]fakeFailure{"tab get": {Exit: 2, Message: "usage: herdr tab get <tab_id>"}}},
		"garbage":           {Malformed: map[string]string{"tab get": "garbage"}},
		"empty":             {Malformed: map[string]string{"tab get": "empty"}},
		"other tab":         {Malformed: map[string]string{"tab get": "wrong-tab"}},
		"server not there":  {Server: "not_running"},
		"protocol mismatch": {Server: "incompatible"},
	}
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
		if err := f.cli.Check(ctx); err != nil {
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
		if err := f.cli.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		f := newFixture(t, "PATH="+t.TempDir())
		err := f.cli.Check(ctx)
		if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "requires Herdr") {
			t.Errorf("Check = %v, want ErrNotInstalled with guidance", err)
		}
		if _, err := f.cli.CreateTab(ctx, TabSpec{Cwd: "/repo", Title: "x"}); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("CreateTab = %v, want ErrNotInstalled", err)
		}
	})
	t.Run("explicit path missing", func(t *testing.T) {
		f := newFixture(t)
		f.cli.Runner = ExecRunner{Path: filepath.Join(t.TempDir(), "herdr"), Env: f.Env}
		if err := f.cli.Check(ctx); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("Check = %v, want ErrNotInstalled", err)
		}
	})
	failing := map[string]struct {
		control fakeControl
		env     []string
		errIs   error
	}{
		"too old":            {control: fakeControl{Version: "0.7.4"}, errIs: ErrTooOld},
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
			err := f.cli.Check(ctx)
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
	if got := AgentName(testRunID); got != "sub-3f2a9c1e-77b0-4d5a-9" {
		t.Errorf("AgentName = %q", got)
	}
	if got := AgentName("Ä.B/C"); got != "sub-bc" {
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

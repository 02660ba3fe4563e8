package subs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/herdr"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/launch"
)

const mainID = "main-session-1"

func TestDelegateTalkTalkClose(t *testing.T) {
	f := newFixture(t)
	d := f.delegate(mainID, "writer", "Write the README")
	if d.Action != "created" || d.Profile != "writer" || d.Adapter != "herdr" {
		t.Fatalf("delegation = %+v", d)
	}
	if want := "Created Sub: Write the README (profile writer, run " + d.RunID[:8] + ")."; d.Text() != want {
		t.Errorf("text = %q, want %q", d.Text(), want)
	}
	if diff := cmp.Diff([]string{"--version", "status server", "tab create", "pane report-metadata", "agent start", "agent prompt"}, f.commands()); diff != "" {
		t.Errorf("herdr calls (-want +got):\n%s", diff)
	}

	// The tab got exactly the launch argv, env and first prompt.
	p := f.pane(d.RunID)
	tab := f.state().Tabs[p.TabID]
	run := f.run(d.RunID)
	wantArgs := launch.Spec{Profile: profileNamed(t, f.manifest, "writer"), Bridge: testBridge, Trusted: true, Title: "Write the README"}.Args()
	if diff := cmp.Diff(wantArgs, p.Agent.Args); diff != "" {
		t.Errorf("pi args (-want +got):\n%s", diff)
	}
	wantEnv := map[string]string{
		"PI_FACETS_ROLE":       "sub",
		"PI_FACETS_CHANNEL":    run.ChannelDir,
		"PI_FACETS_TOKEN_FILE": filepath.Join(run.ChannelDir, "token"),
	}
	if diff := cmp.Diff(wantEnv, tab.Env); diff != "" {
		t.Errorf("tab env (-want +got):\n%s", diff)
	}
	// herdr types only the fixed kickoff; the task is in the channel.
	if diff := cmp.Diff([]string{launch.KickoffPrompt}, p.Agent.Prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	if got := f.sub(d.RunID).Manifest().Task; got != "task: Write the README" {
		t.Errorf("channel task = %q", got)
	}
	if p.Tokens["facets_role"] != "sub" || p.Tokens["facets_main_session"] != mainID || p.Tokens["facets_profile"] != "writer" {
		t.Errorf("pane metadata = %v", p.Tokens)
	}
	if fi, err := os.Stat(wantEnv["PI_FACETS_TOKEN_FILE"]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi, err)
	}
	// The token is on no herdr command line and in no tab environment.
	token := f.sub(d.RunID).Manifest().Token
	for _, name := range []string{"calls.jsonl", "state.json"} {
		data, err := os.ReadFile(filepath.Join(f.herdrDir, name))
		if err != nil || strings.Contains(string(data), token) {
			t.Errorf("%s holds the capability token (err %v)", name, err)
		}
	}

	rt := f.runtime()
	m1, err := rt.Talk(mainID, d.RunID[:8], "first")
	if err != nil {
		t.Fatal(err)
	}
	if m1.Text() != "Message queued for Sub: Write the README" {
		t.Errorf("talk text = %q", m1.Text())
	}
	if _, err := f.runtime().Talk(mainID, d.RunID, "second"); err != nil {
		t.Fatal(err)
	}
	sub := f.sub(d.RunID)
	msgs, problems, err := sub.Pending(channel.ToSub)
	if err != nil || len(problems) != 0 {
		t.Fatalf("pending: %v %v", err, problems)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if diff := cmp.Diff([]string{"first", "second"}, texts); diff != "" {
		t.Errorf("to-sub inbox (-want +got):\n%s", diff)
	}

	c, err := f.runtime().Close(context.Background(), mainID, d.RunID, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Text() != "Closed Sub: Write the README" || c.Retained {
		t.Errorf("closure = %+v", c)
	}
	f.wantNoSubs("close")
	if _, err := os.Stat(run.ChannelDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("channel not removed: %v", err)
	}
	if _, err := f.runtime().Talk(mainID, d.RunID, "late"); err == nil || !strings.Contains(err.Error(), "Unknown Sub") {
		t.Errorf("talk after close: %v", err)
	}
}

func TestCloseRetainsUndeliveredSubMessages(t *testing.T) {
	f := newFixture(t)
	d := f.delegate(mainID, "oracle", "Advise")
	sub := f.sub(d.RunID)
	final, err := sub.Send(channel.ToMain, "final answer")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.runtime().Close(context.Background(), mainID, d.RunID, "done")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Retained {
		t.Fatalf("closure = %+v, want retained", c)
	}
	// close.json was written before the tab closed; closed.json after.
	if req, ok, err := sub.CloseRequest(); err != nil || !ok || req.Reason != "done" {
		t.Errorf("close.json = %+v %v %v", req, ok, err)
	}
	if _, ok, err := sub.Closed(); err != nil || !ok {
		t.Errorf("closed.json: %v %v", ok, err)
	}
	if got := f.openRuns(mainID); len(got) != 0 {
		t.Errorf("a retained run still holds a slot: %v", got)
	}
	// Once the Main has received the message, the next refresh drops the channel.
	if err := sub.Acknowledge(final); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runtime().List(context.Background(), mainID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sub.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drained channel not removed: %v", err)
	}
	runs, _ := f.runtime().Store.Runs(mainID)
	if len(runs) != 0 {
		t.Errorf("ephemeral run kept after drain: %+v", runs[0])
	}
}

func TestResumePersistentSub(t *testing.T) {
	f := newFixture(t)
	d := f.delegate(mainID, "reviewer", "Review auth")
	if args := f.pane(d.RunID).Agent.Args; slices.Contains(args, "--no-session") || slices.Contains(args, "--session") {
		t.Errorf("persistent launch args = %v", args)
	}
	sessionFile := filepath.Join(f.dir, "sessions", "2026_0192a0b1-aaaa.jsonl")
	os.MkdirAll(filepath.Dir(sessionFile), 0o700)
	os.WriteFile(sessionFile, []byte("{}\n"), 0o600)
	if err := f.sub(d.RunID).WriteSession("0192a0b1-aaaa", sessionFile); err != nil {
		t.Fatal(err)
	}
	f.close(d.RunID)
	l, err := f.runtime().List(context.Background(), mainID, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Resumable) != 1 || l.Resumable[0].SessionID != "0192a0b1-aaaa" {
		t.Fatalf("resumable = %+v", l.Resumable)
	}

	rt := f.runtime()
	r, err := rt.Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID,
		Profile: "reviewer", Title: "Review auth again", Task: "continue", Cwd: "/nonexistent-ignored-on-resume", ResumeSessionID: "0192a0b1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Action != "resumed" || r.SessionID != "0192a0b1-aaaa" || r.RunID == d.RunID {
		t.Errorf("resume = %+v", r)
	}
	if !strings.HasPrefix(r.Text(), "Resumed Sub: Review auth again (profile reviewer, run ") || !strings.HasSuffix(r.Text(), ", session 0192a0b1-aaaa).") {
		t.Errorf("resume text = %q", r.Text())
	}
	args := f.pane(r.RunID).Agent.Args
	if i := slices.Index(args, "--session"); i < 0 || args[i+1] != "0192a0b1-aaaa" || slices.Contains(args, "--no-session") {
		t.Errorf("resume args = %v", args)
	}
	_, err = rt.Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID,
		Profile: "reviewer", Title: "twice", Task: "x", ResumeSessionID: "0192a0b1-aaaa"})
	if err == nil || err.Error() != "Persistent Sub session '0192a0b1-aaaa' is already open." {
		t.Errorf("second resume: %v", err)
	}
	_, err = rt.Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID,
		Profile: "oracle", Title: "x", Task: "x", ResumeSessionID: "0192a0b1-aaaa"})
	if err == nil || err.Error() != "Profile 'oracle' must use sessionPersistence 'persistent' when resuming a Sub session." {
		t.Errorf("ephemeral resume: %v", err)
	}
	_, err = rt.Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID,
		Profile: "reviewer", Title: "x", Task: "x", ResumeSessionID: "nope"})
	if err == nil || err.Error() != "No persistent Sub session matches 'nope'." {
		t.Errorf("unknown resume: %v", err)
	}
}

// Every Herdr step of a launch can fail; each failure must leave no tab,
// no run and no channel behind, and the slot must be free again.
func TestLaunchFailureRollsBack(t *testing.T) {
	cases := map[string]fakeControl{
		"check":               {Fail: map[string]fakeFailure{"status server": {Code: "server_error", Message: "boom"}}},
		"create":              {Fail: map[string]fakeFailure{"tab create": {Code: "workspace_not_found", Message: "boom"}}},
		"create-after-tab":    {Fail: map[string]fakeFailure{"tab create": {Code: "internal", Message: "lost reply", AfterEffect: true}}},
		"create-no-pane":      {Malformed: map[string]string{"tab create": "no-pane-id"}},
		"start":               {Fail: map[string]fakeFailure{"agent start": {Code: "agent_start_timeout", Message: "boom"}}},
		"start-wrong-pane":    {Malformed: map[string]string{"agent start": "wrong-pane"}},
		"metadata":            {Fail: map[string]fakeFailure{"pane report-metadata": {Code: "pane_not_found", Message: "boom"}}},
		"prompt":              {Fail: map[string]fakeFailure{"agent prompt": {Code: "agent_not_found", Message: "boom"}}},
		"prompt-after-effect": {Fail: map[string]fakeFailure{"agent prompt": {Code: "internal", Message: "boom", AfterEffect: true}}},
	}
	for name, ctl := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			for range MaxOpenSubs - 1 {
				f.delegate(mainID, "oracle", "filler")
			}
			before := f.subTabs()
			f.control(ctl)
			_, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "fails", Task: "x"})
			if err == nil {
				t.Fatal("delegate succeeded despite the injected failure")
			}
			var retained *RetainedRunError
			if errors.As(err, &retained) {
				t.Fatalf("rollback reported as failed: %v", err)
			}
			if diff := cmp.Diff(before, f.subTabs()); diff != "" {
				t.Errorf("tabs after rollback (-want +got):\n%s", diff)
			}
			if got := f.openRuns(mainID); len(got) != MaxOpenSubs-1 {
				t.Errorf("open runs = %d, want %d", len(got), MaxOpenSubs-1)
			}
			entries, _ := os.ReadDir(filepath.Join(f.dir, "run", channel.Safe(mainID)))
			if len(entries) != MaxOpenSubs-1 {
				t.Errorf("channels = %d, want %d", len(entries), MaxOpenSubs-1)
			}
			// The slot is free: the fourth Sub launches once Herdr works.
			f.control(fakeControl{})
			f.delegate(mainID, "writer", "works")
		})
	}
}

func TestCancelledLaunchRollsBack(t *testing.T) {
	f := newFixture(t)
	f.control(fakeControl{Hang: []string{"agent prompt"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.runtime().Delegate(ctx, DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "hangs", Task: "x"})
		done <- err
	}()
	waitForFile(t, filepath.Join(f.herdrDir, "hanging-agent_prompt"))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("delegate = %v, want context.Canceled", err)
	}
	f.wantNoSubs("cancelled launch")
}

func TestFailedRollbackKeepsRetryableRun(t *testing.T) {
	f := newFixture(t)
	f.control(fakeControl{Fail: map[string]fakeFailure{
		"agent prompt": {Code: "agent_not_found", Message: "prompt failed"},
		"tab close":    {Code: "internal", Message: "close failed"},
	}})
	_, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "stuck", Task: "x"})
	var retained *RetainedRunError
	if !errors.As(err, &retained) {
		t.Fatalf("delegate = %v, want a RetainedRunError", err)
	}
	if !strings.HasSuffix(err.Error(), "Sub run "+retained.RunID+" remains open. Use close_sub to retry.") {
		t.Errorf("error text = %q", err.Error())
	}
	if tabs := f.subTabs(); len(tabs) != 1 {
		t.Fatalf("tabs = %v, want the stuck one", tabs)
	}
	if got := f.openRuns(mainID); len(got) != 1 || got[0] != retained.RunID {
		t.Fatalf("open runs = %v, want the retained run", got)
	}
	l, err := f.runtime().List(context.Background(), mainID, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Open) != 1 || l.Open[0].LaunchError == "" {
		t.Errorf("listing = %+v", l.Open)
	}
	// Herdr still fails to close: the run and channel stay.
	if _, err := f.runtime().Close(context.Background(), mainID, retained.RunID, ""); err == nil {
		t.Fatal("close succeeded although herdr failed")
	}
	if got := f.openRuns(mainID); len(got) != 1 {
		t.Fatalf("failed close released the run: %v", got)
	}
	// Herdr recovers: a retried close releases tab, run and slot.
	f.control(fakeControl{})
	f.close(retained.RunID[:8])
	f.wantNoSubs("retried close")
}

func TestFifthSubRefused(t *testing.T) {
	f := newFixture(t)
	var first Delegation
	for i := range MaxOpenSubs {
		d := f.delegate(mainID, "oracle", "sub")
		if i == 0 {
			first = d
		}
	}
	calls := len(f.commands())
	_, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "oracle", Title: "fifth", Task: "x"})
	if err == nil || !strings.HasPrefix(err.Error(), "Facets allows at most 4 open Subs. Open now: ") || !strings.Contains(err.Error(), first.RunID[:8]+" 'sub' <oracle>") ||
		!strings.HasSuffix(err.Error(), ". Close one with close_sub (runId) to free its slot; list_sub with all=true shows them with their status, idle ones included.") {
		t.Fatalf("fifth delegate = %v, want the limit, the open Subs and how to free a slot", err)
	}
	for _, c := range f.commands()[calls:] {
		if c == "tab create" {
			t.Errorf("a refused delegate created a tab")
		}
	}
	if n := len(f.subTabs()); n != MaxOpenSubs {
		t.Errorf("tabs = %d", n)
	}
	// Another Main has its own slots.
	f.delegate("other-main", "oracle", "elsewhere")
	// Closing one frees a slot.
	f.close(first.RunID)
	f.delegate(mainID, "oracle", "fifth")
}

func TestInterruptTiedToTurn(t *testing.T) {
	f := newFixture(t)
	d := f.delegate(mainID, "oracle", "Advise")
	sub := f.sub(d.RunID)
	if _, err := f.runtime().Interrupt(mainID, d.RunID); err == nil || err.Error() != "Sub 'Advise' has no active turn to interrupt." {
		t.Fatalf("interrupt without a turn = %v", err)
	}
	if err := sub.SetActiveTurn("turn-a"); err != nil {
		t.Fatal(err)
	}
	i, err := f.runtime().Interrupt(mainID, d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if i.TurnID != "turn-a" || i.Text() != "Requested interruption of Sub: Advise. The Sub session remains open." {
		t.Errorf("interruption = %+v %q", i, i.Text())
	}
	req, ok, err := sub.Interrupt()
	if err != nil || !ok || req.TurnID != "turn-a" || req.RequestedAt == 0 {
		t.Fatalf("interrupt.json = %+v %v %v", req, ok, err)
	}
	// The Sub moves on to follow-up work before it sees the request: the
	// request still names turn-a, so it cannot cancel turn-b.
	if err := sub.SetActiveTurn("turn-b"); err != nil {
		t.Fatal(err)
	}
	if req, _, _ := sub.Interrupt(); req.TurnID != "turn-a" {
		t.Errorf("late interrupt retargeted to %q", req.TurnID)
	}
	// A new request targets the new turn.
	if i, err := f.runtime().Interrupt(mainID, d.RunID); err != nil || i.TurnID != "turn-b" {
		t.Errorf("second interrupt = %+v %v", i, err)
	}
	if tabs := f.subTabs(); len(tabs) != 1 {
		t.Errorf("interrupt closed the tab: %v", tabs)
	}
}

func TestRunLookup(t *testing.T) {
	f := newFixture(t)
	a := f.delegate(mainID, "oracle", "a")
	if _, err := f.runtime().Talk(mainID, "zzz", "x"); err == nil || err.Error() != "Unknown Sub 'zzz'." {
		t.Errorf("unknown: %v", err)
	}
	if _, err := f.runtime().Talk("other-main", a.RunID, "x"); err == nil || err.Error() != "Unknown Sub '"+a.RunID+"'." {
		t.Errorf("another Main's run: %v", err)
	}
	if _, err := f.runtime().Talk("", a.RunID, "x"); err == nil || err.Error() != "Facets is not attached to an active Main session." {
		t.Errorf("no main: %v", err)
	}
	// Two runs whose ids share a prefix: a prefix must be unique.
	store := f.runtime().Store
	for _, id := range []string{"abcdef01-1", "abcdef01-2"} {
		if err := store.SaveRun(&Run{Version: RunVersion, RunID: id, MainSessionID: mainID, Title: id, ChannelDir: filepath.Join(f.dir, "none")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.runtime().Talk(mainID, "abcdef01", "x"); err == nil || err.Error() != "Ambiguous Sub prefix 'abcdef01'. Use a longer run ID." {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "review", Title: "x", Task: "x"}); err == nil || err.Error() != "'review' is user-invoked only; run /sub:review" {
		t.Errorf("manual via delegate: %v", err)
	}
	if _, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "nope", Title: "x", Task: "x"}); err == nil || err.Error() != "Unknown profile 'nope'." {
		t.Errorf("unknown profile: %v", err)
	}
}

func TestAbandonedLaunchBecomesClosable(t *testing.T) {
	f := newFixture(t)
	store := f.runtime().Store
	// A launch still running in another (live) process must not be closed
	// under it.
	live := &Run{Version: RunVersion, RunID: "live-launch", MainSessionID: mainID, Title: "live", ChannelDir: filepath.Join(f.dir, "none"), LaunchPID: os.Getpid()}
	// A launcher that died: no process has a negative PID.
	dead := &Run{Version: RunVersion, RunID: "dead-launch", MainSessionID: mainID, Title: "dead", ChannelDir: filepath.Join(f.dir, "none"), LaunchPID: -1}
	for _, r := range []*Run{live, dead} {
		if err := store.SaveRun(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.runtime().Close(context.Background(), mainID, "live-launch", ""); err == nil || !strings.Contains(err.Error(), "still launching") {
		t.Errorf("closing a live launch: %v", err)
	}
	if _, err := f.runtime().Close(context.Background(), mainID, "dead-launch", ""); err != nil {
		t.Errorf("closing an abandoned launch: %v", err)
	}
	if got := f.openRuns(mainID); len(got) != 1 || got[0] != "live-launch" {
		t.Errorf("open runs = %v", got)
	}
}

func TestDelegateLoadsHerdrAgentStateAndResolvesCwd(t *testing.T) {
	f := newFixture(t)
	rt := f.runtime()
	hook := filepath.Join(rt.AgentDir, "extensions", "herdr-agent-state.ts")
	os.MkdirAll(filepath.Dir(hook), 0o700)
	os.WriteFile(hook, []byte("export default () => {}\n"), 0o600)
	d, err := rt.Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "oracle", Title: "t", Task: "x", Cwd: ".."})
	if err != nil {
		t.Fatal(err)
	}
	args := f.pane(d.RunID).Agent.Args
	if diff := cmp.Diff([]string{"--no-extensions", "-e", testBridge, "-e", hook, "--no-session"}, args[:6]); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	run := f.run(d.RunID)
	if want := filepath.Dir(f.manifest.Cwd); run.Cwd != want {
		t.Errorf("cwd = %s, want %s", run.Cwd, want)
	}
	_, err = rt.Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "oracle", Title: "t", Task: "x", Cwd: "no-such-dir"})
	if err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("bad cwd: %v", err)
	}
	if n := len(f.subTabs()); n != 1 {
		t.Errorf("tabs = %d, want 1", n)
	}
}

func TestFailedCloseKeepsRunAndChannel(t *testing.T) {
	f := newFixture(t)
	d := f.delegate(mainID, "oracle", "Advise")
	f.control(fakeControl{Fail: map[string]fakeFailure{"tab close": {Code: "internal", Message: "no"}}})
	if _, err := f.runtime().Close(context.Background(), mainID, d.RunID, ""); err == nil || !strings.Contains(err.Error(), "stays open") {
		t.Fatalf("close = %v", err)
	}
	sub := f.sub(d.RunID)
	if _, ok, err := sub.Closed(); err != nil || ok {
		t.Errorf("closed.json written after a failed close: %v %v", ok, err)
	}
	if got := f.openRuns(mainID); len(got) != 1 {
		t.Errorf("open runs = %v", got)
	}
	if _, err := f.runtime().Talk(mainID, d.RunID, "still there?"); err != nil {
		t.Errorf("talk after failed close: %v", err)
	}
	if n := len(f.subTabs()); n != 1 {
		t.Errorf("tabs = %d", n)
	}
}

// TestDelegateLargeTaskStaysOffArgv: herdr takes a prompt on its command
// line, which Linux caps at 128 KiB per argument and which every local user
// can read, so a 1 MiB task must reach the Sub through its channel.
func TestDelegateLargeTaskStaysOffArgv(t *testing.T) {
	f := newFixture(t)
	task := "private-task-" + strings.Repeat("0123456789abcdef", channel.MaxMessageBytes/16)
	task = task[:channel.MaxMessageBytes]
	d, err := f.runtime().Delegate(context.Background(), DelegateRequest{
		Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "big", Task: task,
	})
	if err != nil {
		t.Fatalf("Delegate with a %d-byte task: %v", len(task), err)
	}
	for _, c := range f.Calls() {
		for _, a := range c.Argv {
			if strings.Contains(a, "private-task-") || len(a) > herdr.MaxPromptBytes {
				t.Errorf("task text on herdr's command line: %.60q… (%d bytes)", a, len(a))
			}
		}
	}
	if got := f.pane(d.RunID).Agent.Prompts; !slices.Equal(got, []string{launch.KickoffPrompt}) {
		t.Errorf("prompts = %.80q", got)
	}
	if got := f.sub(d.RunID).Manifest().Task; got != task {
		t.Errorf("channel task is %d bytes, want the %d-byte task", len(got), len(task))
	}
	if _, err := f.runtime().Delegate(context.Background(), DelegateRequest{
		Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "too big", Task: task + "x",
	}); err == nil || !strings.Contains(err.Error(), "byte limit") {
		t.Errorf("Delegate with a task over 1 MiB = %v", err)
	}
}

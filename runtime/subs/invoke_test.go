package subs

import (
	"context"
	"github.com/facets-dev/facets/compiler/manifest"
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

func (f *fixture) invoke(main, profile, task string) (Delegation, error) {
	// A fresh Runtime each time: every profile command is a new process.
	return f.runtime().Invoke(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: main, Profile: profile, Task: task})
}

// mustInvoke is invoke for a call that must succeed.
func (f *fixture) mustInvoke(main, profile, task string) Delegation {
	f.tb.Helper()
	d, err := f.invoke(main, profile, task)
	if err != nil {
		f.tb.Fatal(err)
	}
	return d
}

func (f *fixture) countCommand(name string) int {
	n := 0
	for _, c := range f.commands() {
		if c == name {
			n++
		}
	}
	return n
}

func TestBindingsSurviveNewProcesses(t *testing.T) {
	f := newFixture(t)
	created := f.mustInvoke(mainID, "review", "Review MR 42")
	if created.Action != "created" || created.Origin != manifest.OriginManual || created.Title != "review" {
		t.Fatalf("first invocation = %+v", created)
	}
	if got := InvocationText(created); got != "created: review · "+created.RunID[:8] {
		t.Errorf("notification = %q", got)
	}
	p := f.pane(created.RunID)
	if i := slices.Index(p.Agent.Args, "--name"); i < 0 || p.Agent.Args[i+1] != "[sub:manual] review" {
		t.Errorf("manual args = %v", p.Agent.Args)
	}
	wantPrompt := "[User-invoked profile: review]\nThe user explicitly requests this task:\nReview MR 42"
	if diff := cmp.Diff([]string{launch.KickoffPrompt}, p.Agent.Prompts); diff != "" {
		t.Errorf("prompt (-want +got):\n%s", diff)
	}
	if got := f.sub(created.RunID).Manifest().Task; got != wantPrompt {
		t.Errorf("channel task = %q, want %q", got, wantPrompt)
	}

	// A new process (reload) reuses the open Sub: no tab, no slot.
	queued := f.mustInvoke(mainID, "review", "")
	if queued.Action != "queued" || queued.RunID != created.RunID || queued.MessageID == "" {
		t.Fatalf("second invocation = %+v", queued)
	}
	if n := f.countCommand("tab create"); n != 1 {
		t.Errorf("tab create calls = %d, want 1", n)
	}
	msgs, _, err := f.sub(created.RunID).Pending(channel.ToSub)
	if err != nil || len(msgs) != 1 || !strings.HasSuffix(msgs[0].Text, "\n"+"The user invoked this profile for the current workspace. Perform the task described by your profile; ask Main for any required details.") {
		t.Errorf("queued task = %+v %v", msgs, err)
	}
	if got := f.openRuns(mainID); len(got) != 1 {
		t.Errorf("open runs = %v", got)
	}

	// Another Main gets its own binding and its own Sub.
	other, err := f.invoke("main-session-2", "review", "x")
	if err != nil || other.Action != "created" || other.RunID == created.RunID {
		t.Fatalf("other Main = %+v %v", other, err)
	}
	l, err := f.runtime().List(context.Background(), "main-session-2", true)
	if err != nil || len(l.Open) != 1 || l.Open[0].RunID != other.RunID {
		t.Errorf("other Main sees = %+v %v", l, err)
	}

	// The Sub saved its session; then the user closed its tab in Herdr.
	sessionFile := filepath.Join(f.dir, "sessions", "review-session.jsonl")
	os.MkdirAll(filepath.Dir(sessionFile), 0o700)
	os.WriteFile(sessionFile, []byte("{}\n"), 0o600)
	if err := f.sub(created.RunID).WriteSession("0192review", sessionFile); err != nil {
		t.Fatal(err)
	}
	if err := f.runtime().Surface.CloseTab(context.Background(), herdr.Handle{TabID: p.TabID}); err != nil {
		t.Fatal(err)
	}
	resumed := f.mustInvoke(mainID, "review", "Review MR 43")
	if resumed.Action != "resumed" || resumed.SessionID != "0192review" || resumed.RunID == created.RunID {
		t.Fatalf("resume = %+v", resumed)
	}
	if got := InvocationText(resumed); got != "resumed: review · "+resumed.RunID[:8]+" · session 0192review" {
		t.Errorf("notification = %q", got)
	}
	args := f.pane(resumed.RunID).Agent.Args
	if i := slices.Index(args, "--session"); i < 0 || args[i+1] != "0192review" {
		t.Errorf("resume args = %v", args)
	}
	b, ok, err := f.runtime().Store.LoadBinding(mainID, "review")
	if err != nil || !ok || b.RunID != resumed.RunID {
		t.Errorf("binding = %+v %v %v", b, ok, err)
	}
	// A manual session is never offered to delegate.
	if _, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "reviewer", Title: "x", Task: "x", ResumeSessionID: "0192review"}); err == nil {
		t.Error("delegate resumed a user-invoked session")
	}
}

// wantRefusedInvoke invokes review again and fails unless the invocation is
// refused with exactly want and no tab beyond the first Sub's was created.
func (f *fixture) wantRefusedInvoke(task, want string) {
	f.tb.Helper()
	if _, err := f.invoke(mainID, "review", task); err == nil || err.Error() != want {
		f.tb.Fatalf("invoke = %v, want %q", err, want)
	}
	if n := f.countCommand("tab create"); n != 1 {
		f.tb.Errorf("tab create calls = %d, want 1", n)
	}
}

func TestInvokeRefusesUncertainHerdr(t *testing.T) {
	f := newFixture(t)
	created := f.mustInvoke(mainID, "review", "x")
	f.control(fakeControl{AgentStatus: "bogus"})
	f.wantRefusedInvoke("y", "Cannot verify the existing Sub is available. Close its tab before retrying; no duplicate session was created.")
	f.control(fakeControl{})

	// The channel vanished but Herdr still shows the tab.
	if err := os.RemoveAll(f.run(created.RunID).ChannelDir); err != nil {
		t.Fatal(err)
	}
	f.wantRefusedInvoke("z", "The existing Sub channel is missing and its tab is not confirmed closed; refusing to open the session twice.")
}

func TestInvokeRefusesMissingSessions(t *testing.T) {
	f := newFixture(t)
	created := f.mustInvoke(mainID, "review", "x")
	// Closed before the Sub recorded its session: no id to resume.
	f.close(created.RunID)
	f.wantRefusedInvoke("again", "The previous Sub session ID was not recorded; refusing to create a replacement session.")

	// Recorded, but the session file has since disappeared.
	run := f.run(created.RunID)
	run.SubSessionID, run.SubSessionFile = "gone-session", filepath.Join(f.dir, "missing.jsonl")
	if err := f.runtime().Store.SaveRun(run); err != nil {
		t.Fatal(err)
	}
	_, err := f.invoke(mainID, "review", "again")
	if err == nil || !strings.Contains(err.Error(), "refusing to create a replacement session") {
		t.Fatalf("missing session file = %v", err)
	}

	// The bound run's record itself is gone.
	if err := f.runtime().Store.DeleteRun(mainID, created.RunID); err != nil {
		t.Fatal(err)
	}
	f.wantRefusedInvoke("again", "The saved profile binding is unavailable; refusing to create a replacement session.")
}

func TestInvokeEphemeralStartsFreshAfterClose(t *testing.T) {
	f := newFixture(t)
	first := f.mustInvoke(mainID, "oracle", "x")
	f.close(first.RunID)
	second, err := f.invoke(mainID, "oracle", "y")
	if err != nil || second.Action != "created" || second.RunID == first.RunID {
		t.Fatalf("after close = %+v %v", second, err)
	}
	if args := f.pane(second.RunID).Agent.Args; !slices.Contains(args, "--no-session") {
		t.Errorf("ephemeral manual args = %v", args)
	}
}

// TestInvokeDoesNotReuseAnUnrelatedTab: after a Herdr restart the bound
// run's tab id names a user's tab; the task must not be queued as if the
// Sub were still there.
func TestInvokeDoesNotReuseAnUnrelatedTab(t *testing.T) {
	f := newFixture(t)
	created := f.mustInvoke(mainID, "review", "Review MR 42")
	f.Restart()
	f.Run("tab", "create", "--workspace", "w1", "--cwd", "/", "--label", "user's tab", "--no-focus")
	again, err := f.invoke(mainID, "review", "Review MR 43")
	if err == nil && again.Action == "queued" {
		t.Fatalf("queued to run %s whose tab id now names an unrelated tab", created.RunID)
	}
	if tabs := f.subTabs(); len(tabs) < 1 || tabs[0] != created.TabID {
		t.Errorf("the unrelated tab %s was touched: %v", created.TabID, tabs)
	}
	// The stale run is known to be gone, not stuck as "cannot verify".
	if err != nil && strings.Contains(err.Error(), "Cannot verify") {
		t.Errorf("invoke = %v, want the stale run released", err)
	}
	if slices.Contains(f.openRuns(mainID), created.RunID) {
		t.Errorf("run %s whose pane is gone is still open", created.RunID)
	}
}

// TestInvokeTakesNoDelegateOnlyFields: one request type serves delegate and
// invoke, but a binding decides an invocation's title, cwd and session.
func TestInvokeTakesNoDelegateOnlyFields(t *testing.T) {
	f := newFixture(t)
	for name, req := range map[string]DelegateRequest{
		"title":  {Title: "t"},
		"cwd":    {Cwd: "/"},
		"resume": {ResumeSessionID: "s"},
	} {
		req.Manifest, req.MainSessionID, req.Profile = f.manifest, mainID, "review"
		if _, err := f.runtime().Invoke(context.Background(), req); err == nil || !strings.Contains(err.Error(), "binding") {
			t.Errorf("%s: Invoke = %v", name, err)
		}
	}
	if calls := f.Calls(); len(calls) != 0 {
		t.Errorf("herdr was called: %v", f.Commands())
	}
}

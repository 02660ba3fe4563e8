package subs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facets-dev/facets/internal/golden"
	"github.com/facets-dev/facets/internal/herdrtest"
)

// listScene sets up one Main with an idle ephemeral Sub, an open
// persistent Sub, an open user-invoked specialist and a closed persistent
// session, and returns a replacer that makes ids and paths stable.
func listScene(t *testing.T) (*fixture, *strings.Replacer) {
	f := newFixture(t)
	// Every Sub takes its prompt up at once, so an idle one has finished.
	f.control(fakeControl{PromptSubmitMS: new(int)})
	// Each launch a second apart: listings are in launch order.
	tick := func() { f.now = f.now.Add(time.Second) }
	oracle := f.delegate(mainID, "oracle", "Advise on caching")
	tick()
	reviewer := f.delegate(mainID, "reviewer", "Review auth")
	tick()
	closed := f.delegate(mainID, "reviewer", "Review billing")
	tick()
	sessionFile := filepath.Join(f.dir, "sessions", "billing.jsonl")
	os.MkdirAll(filepath.Dir(sessionFile), 0o700)
	os.WriteFile(sessionFile, []byte("{}\n"), 0o600)
	modified := f.now.Add(-time.Hour)
	if err := f.sub(closed.RunID).WriteSession("0192billing", sessionFile); err != nil {
		t.Fatal(err)
	}
	f.close(closed.RunID)
	os.Chtimes(sessionFile, modified, modified)
	manual := f.mustInvoke(mainID, "review", "Review MR 42")
	f.now = f.now.Add(90 * time.Second)
	example, _ := filepath.Abs("../../testdata/example")
	var pairs []string
	for name, id := range map[string]string{"ORACLE": oracle.RunID, "REVIEWER": reviewer.RunID, "CLOSED": closed.RunID, "MANUAL": manual.RunID} {
		pairs = append(pairs, id, "<"+name+">", id[:8], "<"+name+"8>")
	}
	pairs = append(pairs, example, "$EXAMPLE", f.dir, "$TMP")
	return f, strings.NewReplacer(pairs...)
}

func TestListGolden(t *testing.T) {
	f, stable := listScene(t)
	cases := []struct {
		name   string
		status string
		all    bool
	}{
		{"list-idle-default", "idle", false},
		{"list-idle-all", "idle", true},
		{"list-working-default", "working", false},
		{"list-unknown-all", "bogus", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.control(fakeControl{AgentStatus: c.status})
			l, err := f.runtime().List(context.Background(), mainID, c.all)
			if err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(l, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := stable.Replace(l.Text() + "\n-- json --\n" + string(js) + "\n")
			path := filepath.Join("testdata", c.name+".golden")
			golden.Check(t, path, []byte(got))
		})
	}
}

func TestListEmptyAndOtherMains(t *testing.T) {
	f, _ := listScene(t)
	l, err := f.runtime().List(context.Background(), "main-session-2", false)
	if err != nil {
		t.Fatal(err)
	}
	// Agent-invokable persistent sessions are resumable from any Main; the
	// user-invoked specialist stays private to its owning Main.
	if len(l.Open) != 0 || len(l.Resumable) != 1 || l.Resumable[0].SessionID != "0192billing" {
		t.Errorf("another Main sees %+v", l)
	}
	empty := Listing{Open: []OpenSub{}, Resumable: []Resumable{}}
	if empty.Text() != "no Sub sessions." {
		t.Errorf("empty text = %q", empty.Text())
	}
}

// TestListKeepsSubsJustHandedWork: herdr answers agent prompt before its
// Enter lands, so an idle Sub right after delegate or talk has not started
// yet; list must not take it for a finished one and hide it.
func TestListKeepsSubsJustHandedWork(t *testing.T) {
	f := newFixture(t)
	f.control(fakeControl{PromptSubmitMS: herdrtest.Never()})
	d := f.delegate(mainID, "oracle", "Advise")
	list := func() []OpenSub {
		t.Helper()
		l, err := f.runtime().List(context.Background(), mainID, false)
		if err != nil {
			t.Fatal(err)
		}
		return l.Open
	}
	if open := list(); len(open) != 1 || open[0].Status != StatusSubmitted {
		t.Fatalf("right after delegate: %+v, want the Sub listed as %s", open, StatusSubmitted)
	}

	// The Sub took its prompt up and finished: Herdr's sequence moved on.
	run := f.run(d.RunID)
	earlier := *run.Surface.PromptSeq - 1
	run.Surface.PromptSeq = &earlier
	if err := f.runtime().Store.SaveRun(run); err != nil {
		t.Fatal(err)
	}
	if open := list(); len(open) != 0 {
		t.Fatalf("an idle ephemeral Sub that finished is listed: %+v", open)
	}

	if _, err := f.runtime().Talk(mainID, d.RunID, "one more thing"); err != nil {
		t.Fatal(err)
	}
	if open := list(); len(open) != 1 || open[0].Status != StatusQueued {
		t.Errorf("right after talk: %+v, want the Sub listed as %s", open, StatusQueued)
	}
}

// TestRestartedHerdrUnrelatedTabIsLeftAlone: a fresh Herdr server reuses
// w1:t2 for a user's tab; close and list of the stored run must neither
// close it nor report its state as the Sub's.
func TestRestartedHerdrUnrelatedTabIsLeftAlone(t *testing.T) {
	f := newFixture(t)
	d := f.delegate(mainID, "oracle", "Advise")
	f.Restart()
	f.Run("tab", "create", "--workspace", "w1", "--cwd", "/", "--label", "user's tab", "--no-focus")
	if tabs := f.subTabs(); len(tabs) != 1 || tabs[0] != d.TabID {
		t.Fatalf("the restarted fake did not reuse %s: %v", d.TabID, tabs)
	}
	l, err := f.runtime().List(context.Background(), mainID, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Open) != 1 || l.Open[0].Status != StatusGone {
		t.Errorf("list = %+v, want the run reported %s", l.Open, StatusGone)
	}
	before := len(f.commands())
	if _, err := f.runtime().Close(context.Background(), mainID, d.RunID, ""); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, c := range f.commands()[before:] {
		if c == "tab close" {
			t.Errorf("close ran herdr tab close on a tab that is not the Sub's")
		}
	}
	if tabs := f.subTabs(); len(tabs) != 1 {
		t.Errorf("the unrelated tab was closed: %v", tabs)
	}
	if runs := f.openRuns(mainID); len(runs) != 0 {
		t.Errorf("run still open after close: %v", runs)
	}
}

package subs

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/runtime/channel"
)

const otherMain = "main-session-2"

// gcScene is what a crash leaves behind, one of each kind, beside a live
// Sub: its run ids by role, and the files each leftover's archive must hold.
type gcScene struct {
	f *fixture
	// exited: its Sub took the presence lock and died; live: its Sub holds
	// it; gone: its tab was closed by hand; unsure: its surface cannot be
	// reached; rebooted: its channel is gone (a persistent Sub); orphan: a
	// channel whose record is gone.
	exited, live, gone, unsure, rebooted, orphan string
	// elsewhere: a live Sub in a surface this facets cannot reach.
	elsewhere string
	binding   string
	// inbox holds every inbox file of the leftover channels, by run id and
	// then by "<direction>/<name>", as it was before gc.
	inbox map[string]map[string][]byte
}

func newGCScene(t *testing.T) *gcScene {
	f := newFixture(t)
	s := &gcScene{f: f, inbox: map[string]map[string][]byte{}}
	rt := f.runtime()
	s.exited = f.delegate(mainID, "writer", "exited").RunID
	s.live = f.delegate(mainID, "writer", "live").RunID
	s.gone = f.delegate(mainID, "writer", "gone").RunID
	s.unsure = f.delegate(mainID, "writer", "unsure").RunID
	s.rebooted = f.delegate(otherMain, "reviewer", "rebooted").RunID
	s.orphan = f.delegate(otherMain, "writer", "orphan").RunID

	// The exited Sub ran (it held its presence lock) and left messages in
	// both directions, a corrupt file and a refused replay.
	exited := f.sub(s.exited)
	release, err := exited.HoldPresence()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exited.Send(channel.ToMain, "report from the Sub\n\x00bytes"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Talk(mainID, s.exited, "a question the Sub never read"); err != nil {
		t.Fatal(err)
	}
	inbox := filepath.Join(f.run(s.exited).ChannelDir, "to-main")
	os.WriteFile(filepath.Join(inbox, "corrupt.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(inbox, "old.json"+channel.AsideSuffix), []byte(`{"replayed":true}`), 0o600)
	release()
	f.Run("tab", "close", f.pane(s.exited).TabID) // its Pi is gone, and its tab with it

	// The live Sub holds its lock for the whole test, and has a message.
	liveRelease, err := f.sub(s.live).HoldPresence()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(liveRelease)
	if _, err := rt.Talk(mainID, s.live, "for the live Sub"); err != nil {
		t.Fatal(err)
	}

	// A Sub alive in a surface this facets cannot reach: its lock says
	// enough. And a run whose launching process is still at work.
	s.elsewhere = f.delegate(otherMain, "writer", "alive elsewhere").RunID
	elseRelease, err := f.sub(s.elsewhere).HoldPresence()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(elseRelease)
	er, _, _ := rt.Store.LoadRun(otherMain, s.elsewhere)
	er.Surface.Adapter = "elsewhere"
	launching := &Run{Version: RunVersion, RunID: "launching-now", MainSessionID: otherMain, ProfileName: "writer",
		ChannelDir: filepath.Join(f.dir, "run", "not-yet"), LaunchPID: os.Getpid(), CreatedAt: 1}
	for _, r := range []*Run{er, launching} {
		if err := rt.Store.SaveRun(r); err != nil {
			t.Fatal(err)
		}
	}

	// Someone closed the gone Sub's tab by hand; its Sub never started.
	f.Run("tab", "close", f.pane(s.gone).TabID)

	// The unsure run lives in a surface this facets cannot reach.
	r := f.run(s.unsure)
	r.Surface.Adapter = "elsewhere"
	if err := rt.Store.SaveRun(r); err != nil {
		t.Fatal(err)
	}

	// The rebooted persistent Sub had recorded its session, then lost its
	// channel.
	rb, _, _ := rt.Store.LoadRun(otherMain, s.rebooted)
	rb.SubSessionID, rb.SubSessionFile = "0192a0b1-aaaa", "/sessions/x.jsonl"
	if err := rt.Store.SaveRun(rb); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(rb.ChannelDir); err != nil {
		t.Fatal(err)
	}

	// The orphan's record is gone; its Sub left a message for the Main.
	or, _, _ := rt.Store.LoadRun(otherMain, s.orphan)
	och, err := channel.OpenOwned(or.ChannelDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := och.Send(channel.ToMain, "orphaned report"); err != nil {
		t.Fatal(err)
	}
	och.Close()
	f.Run("tab", "close", f.pane(s.orphan).TabID)
	if err := rt.Store.DeleteRun(otherMain, s.orphan); err != nil {
		t.Fatal(err)
	}

	// A binding to a run that no longer exists.
	s.binding = "0000dead"
	if err := rt.Store.SaveBinding(Binding{MainSessionID: mainID, ProfileName: "release", RunID: s.binding}); err != nil {
		t.Fatal(err)
	}

	for _, id := range []string{s.exited, s.orphan} {
		dir := filepath.Join(f.dir, "run", channel.Safe(mainID), id)
		if id == s.orphan {
			dir = filepath.Join(f.dir, "run", channel.Safe(otherMain), id)
		}
		s.inbox[id] = inboxFiles(t, dir)
	}
	f.now = time.Now().Add(time.Hour) // past the orphan grace
	return s
}

// inboxFiles reads every file of a channel's two inboxes.
func inboxFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, d := range []string{"to-main", "to-sub"} {
		entries, err := os.ReadDir(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, d, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[d+"/"+e.Name()] = data
		}
	}
	return out
}

type found struct {
	Kind LeftoverKind
	ID   string
}

func (s *gcScene) want() []found {
	return []found{
		{LeftoverSubExited, s.exited},
		{LeftoverSurfaceGone, s.gone},
		{LeftoverUncertain, s.unsure},
		{LeftoverStaleBinding, s.binding},
		{LeftoverNoChannel, s.rebooted},
		{LeftoverOrphanChannel, s.orphan},
	}
}

func kinds(c Collection) []found {
	var out []found
	for _, l := range c.Leftovers {
		out = append(out, found{l.Kind, l.RunID})
	}
	return out
}

func sortFound(f []found) []found {
	slices.SortFunc(f, func(a, b found) int { return strings.Compare(string(a.Kind)+a.ID, string(b.Kind)+b.ID) })
	return f
}

// TestGcDryRunListsEachLeftoverWithItsReason: the dry run finds exactly
// the leftovers, says why, and changes nothing.
func TestGcDryRunListsEachLeftoverWithItsReason(t *testing.T) {
	s := newGCScene(t)
	before := tree(t, filepath.Join(s.f.dir, "state"))
	beforeRun := tree(t, filepath.Join(s.f.dir, "run"))
	c, err := s.f.runtime().GC(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sortFound(s.want()), sortFound(kinds(c))); diff != "" {
		t.Errorf("leftovers (-want +got):\n%s", diff)
	}
	reasons := map[LeftoverKind]string{
		LeftoverSubExited:     "its Sub process ended without closing the run (nothing holds ",
		LeftoverSurfaceGone:   "herdr says tab ",
		LeftoverUncertain:     "run " + s.unsure + " lives in elsewhere, which this facets cannot reach",
		LeftoverStaleBinding:  "profile release is bound to run 0000dead, which no longer exists",
		LeftoverNoChannel:     "its channel ",
		LeftoverOrphanChannel: "no run record names this channel and no Sub process holds it",
	}
	for _, l := range c.Leftovers {
		if !strings.HasPrefix(l.Reason, reasons[l.Kind]) || l.Action == "" || l.Released || l.Archive != "" {
			t.Errorf("%s %s: reason %q action %q released %v archive %q", l.Kind, l.RunID, l.Reason, l.Action, l.Released, l.Archive)
		}
	}
	if !strings.Contains(c.Text(), "6 Facets leftover(s) (dry run") {
		t.Errorf("text:\n%s", c.Text())
	}
	if diff := cmp.Diff(before, tree(t, filepath.Join(s.f.dir, "state"))); diff != "" {
		t.Errorf("the dry run changed the state dir (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(beforeRun, tree(t, filepath.Join(s.f.dir, "run"))); diff != "" {
		t.Errorf("the dry run changed channels (-before +after):\n%s", diff)
	}
	if n := s.f.runtime().Store.CountLeftovers(filepath.Join(s.f.dir, "run"), s.f.now); n != 4 {
		t.Errorf("startup count = %d, want 4 (exited, rebooted, orphan, binding: the ones files alone show)", n)
	}
}

// TestGcApplyReleasesAndArchives: --apply releases every leftover but the
// uncertain one, every unreceived file is in the archive byte for byte,
// the live run is untouched, and a second gc finds only the uncertain run.
func TestGcApplyReleasesAndArchives(t *testing.T) {
	s := newGCScene(t)
	liveRun := s.f.run(s.live)
	liveFiles := tree(t, liveRun.ChannelDir)
	c, err := s.f.runtime().GC(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	s.check(t, c.Leftovers)
	if diff := cmp.Diff(liveRun, s.f.run(s.live)); diff != "" {
		t.Errorf("live run record changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(liveFiles, tree(t, liveRun.ChannelDir)); diff != "" {
		t.Errorf("live channel changed (-want +got):\n%s", diff)
	}
	if !slices.Contains(s.f.subTabs(), s.f.pane(s.live).TabID) {
		t.Errorf("the live Sub's tab was closed")
	}
	again, err := s.f.runtime().GC(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]found{{LeftoverUncertain, s.unsure}}, kinds(again)); diff != "" {
		t.Errorf("second gc (-want +got):\n%s", diff)
	}
	if n := s.f.runtime().Store.CountLeftovers(filepath.Join(s.f.dir, "run"), s.f.now); n != 0 {
		t.Errorf("startup count after gc = %d, want 0", n)
	}
}

// TestGcTwoAtOnce: two concurrent gc --apply release each leftover once
// and reach the same end state as one.
func TestGcTwoAtOnce(t *testing.T) {
	s := newGCScene(t)
	var wg sync.WaitGroup
	results := make([]Collection, 2)
	for i := range results {
		wg.Go(func() {
			c, err := s.f.runtime().GC(context.Background(), true)
			if err != nil {
				t.Error(err)
			}
			results[i] = c
		})
	}
	wg.Wait()
	released := map[string]int{}
	var all []Leftover
	for _, c := range results {
		for _, l := range c.Leftovers {
			if l.Error != "" {
				t.Errorf("%s %s: %s", l.Kind, l.RunID, l.Error)
			}
			if l.Released {
				released[l.RunID]++
				all = append(all, l)
			}
		}
	}
	for id, n := range released {
		if n != 1 {
			t.Errorf("%s released %d times", id, n)
		}
	}
	s.check(t, append(all, Leftover{Kind: LeftoverUncertain, RunID: s.unsure}))
}

// check is the end state after gc --apply, given what it reported.
func (s *gcScene) check(t *testing.T, got []Leftover) {
	t.Helper()
	f := s.f
	if diff := cmp.Diff(sortFound(s.want()), sortFound(kinds(Collection{Leftovers: got}))); diff != "" {
		t.Errorf("leftovers (-want +got):\n%s", diff)
	}
	archives := map[string]string{}
	for _, l := range got {
		if l.Released == (l.Kind == LeftoverUncertain) || l.Error != "" {
			t.Errorf("%s %s: released %v error %q", l.Kind, l.RunID, l.Released, l.Error)
		}
		archives[l.RunID] = l.Archive
	}
	// Every unreceived file is in the archive, byte for byte, and the
	// archive reads as a channel.
	for id, files := range s.inbox {
		if archives[id] == "" {
			t.Errorf("%s: no archive", id)
			continue
		}
		if diff := cmp.Diff(files, inboxFiles(t, archives[id])); diff != "" {
			t.Errorf("%s archive (-want +got):\n%s", id, diff)
		}
		r, err := channel.Inspect(archives[id])
		if err != nil || r.RunID != id {
			t.Errorf("inspect %s: %+v %v", archives[id], r, err)
		}
	}
	if _, err := os.Stat(filepath.Join(archives[s.exited], "run.json")); err != nil {
		t.Errorf("exited run's record not archived: %v", err)
	}
	// The persistent Sub's session reference is archived and it stays
	// resumable: closed, not deleted.
	var rb Run
	if _, err := readJSON(filepath.Join(archives[s.rebooted], "run.json"), &rb); err != nil || rb.SubSessionID != "0192a0b1-aaaa" {
		t.Errorf("rebooted archive: %+v %v", rb, err)
	}
	if r, ok, _ := f.runtime().Store.LoadRun(otherMain, s.rebooted); !ok || r.Open() {
		t.Errorf("rebooted run after gc: %+v", r)
	}
	for _, id := range []string{s.exited, s.gone} {
		if _, ok, _ := f.runtime().Store.LoadRun(mainID, id); ok {
			t.Errorf("ephemeral run %s still recorded", id)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "run", channel.Safe(mainID), id)); !os.IsNotExist(err) {
			t.Errorf("channel of %s still there: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "run", channel.Safe(otherMain), s.orphan)); !os.IsNotExist(err) {
		t.Errorf("orphan channel still there: %v", err)
	}
	if _, ok, _ := f.runtime().Store.LoadBinding(mainID, "release"); ok {
		t.Errorf("stale binding still there")
	}
	if _, ok, _ := f.runtime().Store.LoadRun(mainID, s.unsure); !ok || !f.run(s.unsure).Open() {
		t.Errorf("the uncertain run was released")
	}
	// The exited Sub's tab, still open in Herdr, was closed.
	if tabs := f.subTabs(); len(tabs) != 3 {
		t.Errorf("tabs after gc: %v, want the live, the uncertain and the elsewhere Sub's", tabs)
	}
	// The runs alive elsewhere and still launching are untouched.
	if r, ok, _ := f.runtime().Store.LoadRun(otherMain, s.elsewhere); !ok || !r.Open() || !channelExists(r) {
		t.Errorf("the live Sub elsewhere was released: %+v", r)
	}
	if r, ok, _ := f.runtime().Store.LoadRun(otherMain, "launching-now"); !ok || r.LaunchPID != os.Getpid() {
		t.Errorf("the launching run was touched: %+v", r)
	}
}

// TestGcFreesTheSlotsOfGoneSubsAtOnce: a Main with four open runs whose
// Subs are gone can delegate again before any gc.
func TestGcFreesTheSlotsOfGoneSubsAtOnce(t *testing.T) {
	f := newFixture(t)
	for i := range MaxOpenSubs {
		d := f.delegate(mainID, "writer", "w"+string(rune('a'+i)))
		release, err := f.sub(d.RunID).HoldPresence()
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			release() // the Sub died; the first one lives on
		} else {
			t.Cleanup(release)
		}
	}
	f.delegate(mainID, "writer", "fifth")
}

// tree maps every file below dir to its content.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			out[strings.TrimPrefix(path, dir)] = string(data)
		}
		return nil
	})
	return out
}

// TestGcAfterTheSurfaceServerDied: with the Herdr server (or the tmux
// server) dead, a Sub that had taken its presence lock died with it and
// is released; one that never took it is left for the surface to answer
// for: Herdr's CLI cannot tell a dead server from an unreachable one, so
// that run is uncertain and kept; tmux says a killed server's windows are
// gone (its programs got SIGHUP), so it is surface-gone and released.
func TestGcAfterTheSurfaceServerDied(t *testing.T) {
	ctx := context.Background()
	t.Run("herdr", func(t *testing.T) {
		f := newFixture(t)
		died := f.delegate(mainID, "writer", "died").RunID
		unknown := f.delegate(mainID, "writer", "unknown").RunID
		release, err := f.sub(died).HoldPresence()
		if err != nil {
			t.Fatal(err)
		}
		release()
		// A server started with `herdr server` whose socket no longer answers.
		if err := os.WriteFile(filepath.Join(f.herdrDir, "server.pid"), []byte("1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		gcDeadServer(t, f.runtime(), mainID, died, unknown, LeftoverUncertain, "herdr gave no usable answer about tab ")
	})
	t.Run("tmux", func(t *testing.T) {
		rt, socket := tmuxRuntime(t)
		var ids []string
		for _, title := range []string{"died", "unknown"} {
			d, err := rt.Delegate(ctx, DelegateRequest{Manifest: exampleManifest(t), MainSessionID: "m", Profile: "oracle", Title: title, Task: "x"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, d.RunID)
		}
		r, _, _ := rt.Store.LoadRun("m", ids[0])
		ch, err := openChannel(r)
		if err != nil {
			t.Fatal(err)
		}
		release, err := ch.HoldPresence()
		if err != nil {
			t.Fatal(err)
		}
		release()
		ch.Close()
		if out, err := exec.Command("tmux", "-S", socket, "kill-server").CombinedOutput(); err != nil {
			t.Fatalf("kill-server: %v\n%s", err, out)
		}
		gcDeadServer(t, rt, "m", ids[0], ids[1], LeftoverSurfaceGone, "tmux says window ")
	})
}

func gcDeadServer(t *testing.T, rt *Runtime, main, died, unknown string, kind LeftoverKind, why string) {
	t.Helper()
	ctx := context.Background()
	dry, err := rt.GC(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sortFound([]found{{LeftoverSubExited, died}, {kind, unknown}}), sortFound(kinds(dry))); diff != "" {
		t.Fatalf("dry run (-want +got):\n%s\n%s", diff, dry.Text())
	}
	for _, l := range dry.Leftovers {
		if l.RunID == unknown && !strings.HasPrefix(l.Reason, why) {
			t.Errorf("reason %q, want it to start %q", l.Reason, why)
		}
	}
	applied, err := rt.GC(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := applied.Failed(); err != nil {
		t.Error(err)
	}
	if _, ok, _ := rt.Store.LoadRun(main, died); ok {
		t.Errorf("the dead Sub's run is still recorded")
	}
	r, ok, _ := rt.Store.LoadRun(main, unknown)
	if kept := ok && r.Open() && channelExists(r); kept != (kind == LeftoverUncertain) {
		t.Errorf("run %s kept: %v, want kept only when uncertain (%s)", unknown, kept, kind)
	}
}

// TestGcLeavesBusyChannelsAndSymlinksAlone: a channel whose inbox lock a
// writer holds is kept (and reported) until the writer is done; a Main
// directory that is a symlink is never looked into; an archive folder that
// is a symlink is refused and the channel kept, so nothing is lost.
func TestGcLeavesBusyChannelsAndSymlinksAlone(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	id := f.delegate(mainID, "writer", "exited").RunID
	sub := f.sub(id)
	release, err := sub.HoldPresence()
	if err != nil {
		t.Fatal(err)
	}
	release()
	f.Run("tab", "close", f.pane(id).TabID)
	if _, err := sub.Send(channel.ToMain, "keep me"); err != nil {
		t.Fatal(err)
	}
	dir := f.run(id).ChannelDir

	// A Main directory that is a symlink to someone's channels.
	elsewhere := filepath.Join(t.TempDir(), "root")
	other, err := channel.Create(elsewhere, channel.Manifest{MainSessionID: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	os.WriteFile(filepath.Join(other.Dir(), "token"), []byte("t\n"), 0o600)
	if err := os.Symlink(filepath.Join(elsewhere, "victim"), filepath.Join(f.dir, "run", "linked")); err != nil {
		t.Fatal(err)
	}
	f.now = time.Now().Add(time.Hour) // the victim's channel is past the orphan grace

	writer, err := channel.OpenOwned(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := writer.LockInboxes()
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.runtime().GC(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]found{{LeftoverSubExited, id}}, kinds(c)); diff != "" {
		t.Errorf("leftovers (-want +got):\n%s", diff)
	}
	if c.Failed() == nil || !strings.Contains(c.Leftovers[0].Error, "a writer holds the inbox lock") || c.Leftovers[0].Released {
		t.Errorf("busy channel: %+v (failed: %v)", c.Leftovers[0], c.Failed())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("busy channel removed: %v", err)
	}
	unlock()
	writer.Close()

	// The archive folder is a symlink: refused, the channel kept.
	if err := os.Symlink(t.TempDir(), filepath.Join(f.dir, "state", "archive")); err != nil {
		t.Fatal(err)
	}
	c, _ = f.runtime().GC(ctx, true)
	if c.Failed() == nil || c.Leftovers[0].Released {
		t.Errorf("archive through a symlink: %+v", c.Leftovers)
	}
	if _, err := os.Stat(filepath.Join(dir, "to-main")); err != nil {
		t.Errorf("channel removed though its archive failed: %v", err)
	}
	os.Remove(filepath.Join(f.dir, "state", "archive"))
	c, _ = f.runtime().GC(ctx, true)
	if err := c.Failed(); err != nil || !c.Leftovers[0].Released {
		t.Errorf("gc once the writer is done: %+v, %v", c.Leftovers, err)
	}
	if _, err := os.Stat(other.Dir()); err != nil {
		t.Errorf("a channel behind a symlinked Main directory was removed: %v", err)
	}
}

// TestGcMainThatCanNeverBeResumed: once an ephemeral Main has exited, the
// closed runs whose channels wait for it, its user-invoked sessions and its
// bindings are main-gone: archived and released, an agent-invokable
// persistent record kept for other Mains; a Main with its session file, or
// still running, keeps everything.
func TestGcMainThatCanNeverBeResumed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	rt := f.runtime()
	root := rt.ChannelRoot
	retained := func(main, profile string) (string, map[string][]byte) {
		t.Helper()
		id := f.delegate(main, profile, profile).RunID
		run, _, _ := rt.Store.LoadRun(main, id)
		ch, err := openChannel(run)
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		if _, err := ch.Send(channel.ToMain, "for "+main); err != nil {
			t.Fatal(err)
		}
		if c, err := f.runtime().Close(ctx, main, id, ""); err != nil || !c.Retained {
			t.Fatalf("close %s: %+v %v", id, c, err)
		}
		return id, inboxFiles(t, run.ChannelDir)
	}
	ephWriter, ephInbox := retained("eph", "writer")
	ephReviewer, _ := retained("eph", "reviewer")
	manual := &Run{Version: RunVersion, RunID: "manual-1", MainSessionID: "eph", ProfileName: "release", Origin: "manual",
		SessionPersistence: "persistent", SubSessionID: "s-manual", ChannelDir: filepath.Join(root, "eph", "manual-1"), CreatedAt: 1, ClosedAt: 2}
	rt.Store.SaveRun(manual)
	rt.Store.SaveBinding(Binding{MainSessionID: "eph", ProfileName: "release", RunID: "manual-1"})
	eph2, _ := retained("eph2", "writer")
	keptRun, _ := retained("kept", "writer")
	liveRun, _ := retained("live", "writer")

	sessionFile := filepath.Join(f.dir, "kept.jsonl")
	os.WriteFile(sessionFile, nil, 0o600)
	for main, lease := range map[string]channel.MainLease{"eph": {Ephemeral: true}, "eph2": {Ephemeral: true}, "kept": {SessionFile: sessionFile}} {
		release, err := channel.HoldMainPresence(root, main, lease)
		if err != nil {
			t.Fatal(err)
		}
		release() // the Main exited
	}
	liveRelease, err := channel.HoldMainPresence(root, "live", channel.MainLease{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer liveRelease()

	dry, err := rt.GC(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want := sortFound([]found{{LeftoverMainGone, ephWriter}, {LeftoverMainGone, ephReviewer}, {LeftoverMainGone, "manual-1"}, {LeftoverMainGone, ""}, {LeftoverMainGone, eph2}})
	if diff := cmp.Diff(want, sortFound(kinds(dry))); diff != "" {
		t.Fatalf("dry run (-want +got):\n%s\n%s", diff, dry.Text())
	}
	for _, l := range dry.Leftovers {
		if !strings.HasPrefix(l.Reason, "its Main ran without a session file (pi --no-session) and has exited, so it can never be resumed; ") {
			t.Errorf("reason %q", l.Reason)
		}
	}
	if n := rt.Store.CountLeftovers(root, f.now); n != 5 {
		t.Errorf("startup count = %d, want 5", n)
	}
	applied, err := rt.GC(ctx, true)
	if err != nil || applied.Failed() != nil {
		t.Fatalf("apply: %v %v", err, applied.Failed())
	}
	archives := map[string]string{}
	for _, l := range applied.Leftovers {
		archives[l.RunID] = l.Archive
	}
	if diff := cmp.Diff(ephInbox, inboxFiles(t, archives[ephWriter])); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
	if _, ok, _ := rt.Store.LoadRun("eph", ephWriter); ok {
		t.Errorf("the ephemeral run of the gone Main is still recorded")
	}
	if r, ok, _ := rt.Store.LoadRun("eph", ephReviewer); !ok || channelExists(r) {
		t.Errorf("the agent-invokable persistent run: recorded %v, channel kept %v; want the record and no channel", ok, r != nil && channelExists(r))
	}
	var m Run
	if _, err := readJSON(filepath.Join(archives["manual-1"], "run.json"), &m); err != nil || m.SubSessionID != "s-manual" {
		t.Errorf("user-invoked session reference not archived: %+v %v", m, err)
	}
	if _, ok, _ := rt.Store.LoadRun("eph", "manual-1"); ok {
		t.Errorf("the user-invoked run of the gone Main is still recorded")
	}
	if _, ok, _ := rt.Store.LoadBinding("eph", "release"); ok {
		t.Errorf("the gone Main's binding is still there")
	}
	if _, err := os.Stat(filepath.Join(root, "eph")); !os.IsNotExist(err) {
		t.Errorf("the gone Main's channel folder is still there: %v", err)
	}
	for _, dir := range []string{filepath.Join(root, "eph2"), rt.Store.mainDir("eph2")} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the emptied folder %s of a gone Main is still there: %v", dir, err)
		}
	}
	// Its folder in the store keeps the persistent record other Mains may resume.
	if _, err := os.Stat(rt.Store.mainDir("eph")); err != nil {
		t.Errorf("the gone Main's store folder, with a record in it, was removed: %v", err)
	}
	for main, id := range map[string]string{"kept": keptRun, "live": liveRun} {
		if r, ok, _ := rt.Store.LoadRun(main, id); !ok || !channelExists(r) {
			t.Errorf("%s's retained run was released", main)
		}
	}
}

// TestGcKeepsAnUnreadableChannel: a channel without a record whose
// manifest cannot be read is uncertain: kept for inspection, never removed.
func TestGcKeepsAnUnreadableChannel(t *testing.T) {
	f := newFixture(t)
	rt := f.runtime()
	ch, err := channel.Create(rt.ChannelRoot, channel.Manifest{MainSessionID: mainID, Profile: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	ch.Close()
	os.WriteFile(filepath.Join(ch.Dir(), "token"), []byte("t\n"), 0o600)
	f.now = time.Now().Add(time.Hour)
	c, err := f.runtime().GC(context.Background(), true)
	if err != nil || len(c.Leftovers) != 1 || c.Leftovers[0].Kind != LeftoverUncertain || !strings.Contains(c.Leftovers[0].Reason, "but it cannot be read: ") {
		t.Fatalf("gc: %+v %v", c.Leftovers, err)
	}
	if _, err := os.Stat(filepath.Join(ch.Dir(), "manifest.json")); err != nil {
		t.Errorf("the unreadable channel was touched: %v", err)
	}
}

// The channel root is shared by every state dir of the user: gc of one
// state dir never takes another's channel for an orphan, and the startup
// count leaves it out; a channel an older facets made (no state dir named)
// is uncertain, never released.
func TestGcLeavesAnotherStateDirsChannels(t *testing.T) {
	f := newFixture(t)
	d := f.delegate(mainID, "writer", "theirs")
	release, err := f.sub(d.RunID).HoldPresence()
	if err != nil {
		t.Fatal(err)
	}
	release() // its serve is gone for a moment (a /reload): the lock is free
	f.now = time.Now().Add(time.Hour)
	mine := f.runtime()
	mine.Store = Store{Dir: filepath.Join(f.dir, "other-state")}
	c, err := mine.GC(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Leftovers) != 0 {
		t.Fatalf("gc of another state dir found %s", c.Text())
	}
	if _, err := os.Stat(f.run(d.RunID).ChannelDir); err != nil {
		t.Fatalf("the channel of another state dir's run was removed: %v", err)
	}
	if n := mine.Store.CountLeftovers(mine.ChannelRoot, f.now); n != 0 {
		t.Errorf("startup count %d, want 0", n)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "other-state", channel.Safe(mainID))); !os.IsNotExist(err) {
		t.Errorf("gc left a state folder for a Main it only knows by its channels: %v", err)
	}

	// The same channel without an owner, as an older facets wrote it.
	dir := f.run(d.RunID).ChannelDir
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(raw, &m)
	delete(m, "stateDir")
	raw, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(dir, "manifest.json"), raw, 0o600)
	c, _ = mine.GC(context.Background(), true)
	if len(c.Leftovers) != 1 || c.Leftovers[0].Kind != LeftoverUncertain || c.Leftovers[0].Released {
		t.Fatalf("a channel naming no state dir: %s", c.Text())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("an ownerless channel was removed: %v", err)
	}
}

// A free presence lock with the run's tab still there is a Sub whose serve
// is not running (a /reload, a crash of serve), not a dead Sub: gc lists
// it as uncertain and leaves tab, channel and record alone.
func TestGcKeepsALockFreeSubWhoseTabIsThere(t *testing.T) {
	f := newFixture(t)
	d := f.delegate(mainID, "writer", "reloading")
	release, err := f.sub(d.RunID).HoldPresence()
	if err != nil {
		t.Fatal(err)
	}
	release()
	c, err := f.runtime().GC(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Leftovers) != 1 || c.Leftovers[0].Kind != LeftoverUncertain || c.Leftovers[0].Released || !strings.Contains(c.Leftovers[0].Reason, "its Pi may be alive") {
		t.Fatalf("gc: %s", c.Text())
	}
	if !slices.Contains(f.subTabs(), d.TabID) || len(f.openRuns(mainID)) != 1 {
		t.Errorf("gc touched a Sub that may be alive: tabs %v, open runs %v", f.subTabs(), f.openRuns(mainID))
	}
}

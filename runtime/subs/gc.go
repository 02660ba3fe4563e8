package subs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/surface"
)

// LeftoverKind names one kind of thing a crash leaves behind.
type LeftoverKind string

// The leftovers gc finds. Every kind but LeftoverUncertain is released by
// gc --apply; an uncertain one is only listed.
const (
	// LeftoverSubExited: an open run whose Sub process has ended (its
	// channel's presence lock is free) without closing the run.
	LeftoverSubExited LeftoverKind = "sub-exited"
	// LeftoverSurfaceGone: an open run whose surface says its tab or
	// window is gone, and no Sub process holds its channel.
	LeftoverSurfaceGone LeftoverKind = "surface-gone"
	// LeftoverNoChannel: an open run whose channel directory is gone, as
	// after a reboot that emptied the runtime dir.
	LeftoverNoChannel LeftoverKind = "no-channel"
	// LeftoverOrphanChannel: a channel facets created that no run record
	// names, and no Sub holds.
	LeftoverOrphanChannel LeftoverKind = "orphan-channel"
	// LeftoverStaleBinding: a profile binding to a run that no longer exists.
	LeftoverStaleBinding LeftoverKind = "stale-binding"
	// LeftoverWorktree: a closed run's kept worktree that holds nothing
	// found nowhere else: no uncommitted changes, and every commit of its
	// branch is on another branch or tag (the Main merged it). A worktree
	// with work is never one: facets list shows it until the user merges
	// or discards it.
	LeftoverWorktree LeftoverKind = "worktree"
	// LeftoverMainGone: what only its Main could use, once that Main has
	// exited and can never be resumed (it ran without a session file, or
	// its session file is gone): a closed run's channel whose messages wait
	// for it, a user-invoked session only it could resume, its bindings.
	LeftoverMainGone LeftoverKind = "main-gone"
	// LeftoverUncertain: something that may be a leftover, but the surface
	// or the files give no usable answer; gc never releases it.
	LeftoverUncertain LeftoverKind = "uncertain"
)

// LeftoverKinds are the kinds gc looks for, in the order it reports them.
// Each keeps what it cannot prove is safe to drop.
func LeftoverKinds() []LeftoverKind {
	return []LeftoverKind{LeftoverSubExited, LeftoverSurfaceGone, LeftoverNoChannel,
		LeftoverOrphanChannel, LeftoverStaleBinding, LeftoverWorktree, LeftoverMainGone, LeftoverUncertain}
}

// Leftover is one thing gc found: what it is, why it is left over and what
// --apply does (or did) with it.
type Leftover struct {
	Kind LeftoverKind `json:"kind"`
	// MainSession is the Main's directory name in the state and runtime dirs.
	MainSession string `json:"mainSession"`
	RunID       string `json:"runId,omitempty"`
	Profile     string `json:"profile,omitempty"`
	// Path is the run record, channel directory or binding it is about.
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Action string `json:"action"`
	// Archive is where --apply kept what it did not delete: the channel's
	// files in its own layout (facets channel inspect --dir reads it) and
	// the run record, with a persistent Sub's session reference.
	Archive  string `json:"archive,omitempty"`
	Released bool   `json:"released,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Collection is the result of GC.
type Collection struct {
	Applied   bool       `json:"applied"`
	Leftovers []Leftover `json:"leftovers"`
}

// Text is gc's report: one block per leftover, its reason and action.
func (c Collection) Text() string {
	esc := termesc.Escape
	if len(c.Leftovers) == 0 {
		return "No Facets leftovers."
	}
	var b strings.Builder
	if c.Applied {
		fmt.Fprintf(&b, "%d Facets leftover(s):\n", len(c.Leftovers))
	} else {
		fmt.Fprintf(&b, "%d Facets leftover(s) (dry run: facets gc --apply releases all but the uncertain ones):\n", len(c.Leftovers))
	}
	for _, l := range c.Leftovers {
		id := l.RunID
		if l.Profile != "" {
			id = "binding " + l.Profile
		}
		if id == "" {
			id = filepath.Base(l.Path)
		}
		fmt.Fprintf(&b, "- %s %s/%s\n  why: %s\n", l.Kind, esc(l.MainSession), esc(id), esc(l.Reason))
		switch {
		case l.Error != "":
			fmt.Fprintf(&b, "  kept: %s\n", esc(l.Error))
		case l.Released:
			fmt.Fprintf(&b, "  done: %s\n", esc(l.Action))
		default:
			fmt.Fprintf(&b, "  %s: %s\n", map[bool]string{true: "not done", false: "would"}[c.Applied], esc(l.Action))
		}
		if l.Archive != "" {
			fmt.Fprintf(&b, "  archive: %s\n", esc(l.Archive))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Failed is an error naming the leftovers --apply could not release, nil
// when there are none.
func (c Collection) Failed() error {
	var kept []string
	for _, l := range c.Leftovers {
		if l.Error != "" {
			kept = append(kept, string(l.Kind)+" "+l.Path+": "+l.Error)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return fmt.Errorf("gc kept %d leftover(s) it could not release: %s", len(kept), strings.Join(kept, "; "))
}

// orphanGrace is how old a channel without a run record must be before it
// counts as left over: delegate creates the channel just before its record.
const orphanGrace = 30 * time.Second

// archiveDirName is the state dir's folder of released leftovers' files.
const archiveDirName = "archive"

// GC finds the leftovers of every Main of this user in the state dir and
// the channel root and, with apply, releases them: files worth keeping go
// to the archive first, and each Main is handled under its slot lock, so
// two gc runs (or a gc and a delegate) never act on the same run at once.
func (rt *Runtime) GC(ctx context.Context, apply bool) (Collection, error) {
	mains, err := rt.gcMains()
	if err != nil {
		return Collection{}, err
	}
	c := Collection{Applied: apply, Leftovers: []Leftover{}}
	for _, m := range mains {
		if !apply {
			c.Leftovers = append(c.Leftovers, rt.leftovers(ctx, m)...)
			continue
		}
		unlock, err := rt.Store.Lock(m, "slots")
		if err != nil {
			return c, fmt.Errorf("gc: %w", err)
		}
		found := rt.leftovers(ctx, m)
		for i := range found {
			rt.release(ctx, &found[i])
		}
		gone, _, _ := rt.mainGone(m)
		if gone {
			// Nothing can reach a Main that is never coming back: once its
			// channels are released, its folders go too.
			channel.RemoveMainDir(rt.ChannelRoot, m)
		}
		unlock()
		// After unlock, which removes slots.lock; only empty folders go, so
		// taking the lock for a Main known only by its channels leaves none.
		rt.Store.removeEmptyMain(m)
		c.Leftovers = append(c.Leftovers, found...)
	}
	return c, nil
}

// gcMains is every Main directory in the state dir or the channel root.
func (rt *Runtime) gcMains() ([]string, error) {
	state, err := rt.Store.MainSessions()
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	all := slices.DeleteFunc(state, func(m string) bool { return m == archiveDirName })
	chans, err := ownDirs(rt.ChannelRoot)
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	all = append(all, chans...)
	slices.Sort(all)
	return slices.Compact(all), nil
}

// ownDirs lists the directories in dir that are the user's own and not
// symlinks; a missing dir has none.
func ownDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.Type()&fs.ModeType != fs.ModeDir { // ReadDir's type is lstat's: a symlink is not a dir
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		out = append(out, e.Name())
	}
	return out, nil
}

// leftovers finds the leftovers of one Main.
func (rt *Runtime) leftovers(ctx context.Context, m string) []Leftover {
	var out []Leftover
	runs, err := rt.Store.Runs(m)
	var bad BadRecordsError
	if errors.As(err, &bad) {
		for _, e := range bad {
			out = append(out, Leftover{Kind: LeftoverUncertain, MainSession: m, Path: filepath.Join(rt.Store.mainDir(m), "runs"),
				Reason: e.Error(), Action: "nothing: fix or delete the record by hand"})
		}
	} else if err != nil {
		out = append(out, Leftover{Kind: LeftoverUncertain, MainSession: m, Path: rt.Store.mainDir(m), Reason: err.Error(), Action: "nothing"})
		return out
	}
	var used map[string]*Run // read once, and only if a closed run keeps a worktree
	inUse := func() map[string]*Run {
		if used == nil {
			used = rt.worktreesInUse()
		}
		return used
	}
	named := map[string]bool{}
	for _, r := range runs {
		named[channel.Safe(r.RunID)] = true
		if l, ok := rt.runLeftover(ctx, m, r); ok {
			out = append(out, l)
		}
		if l, ok := rt.worktreeLeftover(ctx, m, r, inUse); ok {
			out = append(out, l)
		}
	}
	out = append(out, rt.orphanChannels(m, named, len(bad) > 0)...)
	switch gone, why, err := rt.mainGone(m); {
	case err != nil:
		out = append(out, Leftover{Kind: LeftoverUncertain, MainSession: m, Path: filepath.Join(rt.ChannelRoot, m), Reason: err.Error(), Action: "nothing"})
		out = append(out, rt.staleBindings(m)...)
	case gone:
		out = append(out, rt.mainLeftovers(m, runs, why)...)
	default:
		out = append(out, rt.staleBindings(m)...)
	}
	return out
}

// mainGone reports whether the Main whose directory is m has exited and
// can never be resumed, and why, from its presence file alone.
func (rt *Runtime) mainGone(m string) (bool, string, error) {
	p, lease, err := channel.MainPresence(rt.ChannelRoot, m)
	if err != nil || p != channel.PresenceExited {
		return false, "", err
	}
	if lease.Ephemeral {
		return true, "its Main ran without a session file (pi --no-session) and has exited, so it can never be resumed", nil
	}
	if lease.SessionFile == "" {
		return false, "", nil // a lease that says nothing proves nothing
	}
	if _, err := os.Lstat(lease.SessionFile); errors.Is(err, fs.ErrNotExist) {
		return true, "its Main has exited and its session file " + lease.SessionFile + " is gone, so it can never be resumed", nil
	}
	return false, "", nil
}

// mainLeftovers are what only the gone Main m could use: its closed runs'
// channels, its user-invoked persistent sessions, its bindings. Its open
// runs are judged by their Subs, as any Main's.
func (rt *Runtime) mainLeftovers(m string, runs []*Run, why string) []Leftover {
	var out []Leftover
	for _, r := range runs {
		if r.Open() {
			continue
		}
		l := Leftover{Kind: LeftoverMainGone, MainSession: m, RunID: r.RunID, Path: rt.Store.runPath(m, r.RunID)}
		keep := "delete the run record"
		if r.keepsWorktree() {
			keep = "keep the closed run record (its worktree " + r.Worktree.Path + " holds work; facets list shows it)"
		} else if r.Persistent() && !r.Manual() {
			keep = "keep the closed run record (any Main may resume its session)"
		} else if r.Persistent() {
			keep = "archive the run record (its session reference), delete it"
		}
		switch {
		case channelExists(r):
			l.Reason = why + "; the closed run's channel still holds what the Sub sent it"
			l.Action = "archive the channel's unreceived files, remove the channel; " + keep
		case r.Persistent() && r.Manual() && !r.keepsWorktree():
			l.Reason = why + "; this user-invoked session could be resumed only from that Main"
			l.Action = keep
		default:
			continue
		}
		out = append(out, l)
	}
	dir := filepath.Join(rt.Store.mainDir(m), "bindings")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		profile := strings.TrimSuffix(e.Name(), ".json")
		out = append(out, Leftover{Kind: LeftoverMainGone, MainSession: m, Profile: profile, Path: filepath.Join(dir, e.Name()),
			Reason: why + "; only it could use its binding of /sub:" + profile, Action: "delete the binding"})
	}
	return out
}

// runLeftover classifies one run record: open runs whose Sub is provably
// gone are leftovers; a live or closed run is not.
func (rt *Runtime) runLeftover(ctx context.Context, m string, r *Run) (Leftover, bool) {
	l := Leftover{MainSession: m, RunID: r.RunID, Path: rt.Store.runPath(m, r.RunID)}
	if !r.Open() || r.Launching() && processAlive(r.LaunchPID) {
		return l, false
	}
	gone, p, err := subGone(r)
	switch {
	case err != nil:
		l.Kind, l.Reason, l.Action = LeftoverUncertain, "cannot read its channel: "+err.Error(), "nothing"
		return l, true
	case gone && p == channel.PresenceExited:
		// The lock is held by the Sub's facets serve, not by its Pi: a
		// /reload, or a serve that crashed, frees it while Pi lives on.
		// A tab the surface confirms as this run's may be such a Sub.
		if h := r.handle(); h.TabID != "" {
			if s, serr := rt.surfaceOf(r); serr == nil {
				// No answer (a dead server) leaves the free lock to speak.
				if own, _ := s.Owned(ctx, h, r.RunID); own == surface.TabPresent {
					l.Kind, l.Action = LeftoverUncertain, "nothing: close it with facets close --run "+short(r.RunID)+" once its Sub is done"
					l.Reason = fmt.Sprintf("nothing holds %s (its facets serve is not running), but %s still shows %s %s as this run's: its Pi may be alive (a /reload)",
						filepath.Join(r.ChannelDir, "sub.lock"), s.Name(), tabWord(s), h.TabID)
					return l, true
				}
			}
		}
		l.Kind, l.Action = LeftoverSubExited, runAction(r, LeftoverSubExited)
		l.Reason = "its Sub process ended without closing the run (nothing holds " + filepath.Join(r.ChannelDir, "sub.lock") + ")"
		return l, true
	case gone:
		l.Kind, l.Action = LeftoverNoChannel, runAction(r, LeftoverNoChannel)
		l.Reason = "its channel " + r.ChannelDir + " is gone (the runtime dir was emptied, as a reboot does)"
		return l, true
	case p == channel.PresenceLive:
		return l, false
	}
	// No Sub has taken the presence lock: only the surface can tell.
	h := r.handle()
	s, err := rt.surfaceOf(r)
	if err != nil {
		l.Kind, l.Reason, l.Action = LeftoverUncertain, err.Error(), "nothing"
		return l, true
	}
	if h.TabID == "" {
		l.Kind, l.Reason, l.Action = LeftoverUncertain, "its launch ended before "+s.Name()+" named a tab, so none can be asked about", "nothing"
		return l, true
	}
	switch own, err := s.Owned(ctx, h, r.RunID); own {
	case surface.TabGone:
		l.Kind, l.Action = LeftoverSurfaceGone, runAction(r, LeftoverSurfaceGone)
		l.Reason = fmt.Sprintf("%s says %s %s is gone and no Sub process holds its channel", s.Name(), tabWord(s), h.TabID)
		return l, true
	case surface.TabUncertain:
		why := "no usable answer"
		if err != nil {
			why = err.Error()
		}
		l.Kind, l.Reason, l.Action = LeftoverUncertain, fmt.Sprintf("%s gave no usable answer about %s %s (%s)", s.Name(), tabWord(s), h.TabID, why), "nothing"
		return l, true
	}
	return l, false
}

func tabWord(s surface.Surface) string {
	if s.Name() == "tmux" {
		return "window"
	}
	return "tab"
}

// runAction is what releasing r as a leftover of kind does.
func runAction(r *Run, kind LeftoverKind) string {
	var steps []string
	if kind != LeftoverSurfaceGone {
		steps = append(steps, "close its tab if the surface still shows it")
	}
	if kind != LeftoverNoChannel {
		steps = append(steps, "archive the channel's unreceived files, remove the channel")
	} else if r.Persistent() && r.SubSessionID != "" {
		steps = append(steps, "archive the record (its session reference)")
	}
	if r.keepsWorktree() {
		steps = append(steps, "remove its worktree if it holds no work, else keep it and the run record (facets list shows it)")
	}
	if r.Persistent() || r.Manual() {
		steps = append(steps, "mark the run closed (its session stays resumable)")
	} else {
		steps = append(steps, "delete the run record")
	}
	return strings.Join(steps, "; ")
}

// subGone reports, from local files alone, whether r's Sub is provably
// gone: its channel is missing or its presence lock is free. p is the
// presence lock's answer when the channel exists.
func subGone(r *Run) (gone bool, p channel.Presence, err error) {
	if _, err := os.Lstat(r.ChannelDir); errors.Is(err, fs.ErrNotExist) {
		return true, channel.PresenceNone, nil
	}
	p, err = channel.SubPresence(r.ChannelDir)
	if err != nil {
		return false, p, err
	}
	return p == channel.PresenceExited, p, nil
}

// holdsSlot reports whether an open run still counts against MaxOpenSubs:
// every open run but one whose Sub is provably gone.
func holdsSlot(r *Run) bool {
	if r.Launching() {
		return true
	}
	gone, _, err := subGone(r)
	return err != nil || !gone
}

// orphanChannels are the Main's channels no run record names. A channel
// the TypeScript Facets made (no token file), one a Sub holds and one
// younger than orphanGrace are left alone; with unreadable records in
// the Main (unsure) any of them may be named, so they are uncertain.
func (rt *Runtime) orphanChannels(m string, named map[string]bool, unsure bool) []Leftover {
	dir := filepath.Join(rt.ChannelRoot, m)
	names, err := ownDirs(dir)
	if err != nil {
		return []Leftover{{Kind: LeftoverUncertain, MainSession: m, Path: dir, Reason: err.Error(), Action: "nothing"}}
	}
	var out []Leftover
	for _, n := range names {
		path := filepath.Join(dir, n)
		if named[n] || !channel.CreatedByFacets(path) {
			continue
		}
		if fi, err := os.Lstat(path); err != nil || rt.now().Sub(fi.ModTime()) < orphanGrace {
			continue
		}
		l := Leftover{MainSession: m, RunID: n, Path: path, Action: "archive its unreceived messages, remove the channel"}
		p, err := channel.SubPresence(path)
		switch {
		case err != nil:
			l.Kind, l.Reason, l.Action = LeftoverUncertain, err.Error(), "nothing"
		case p == channel.PresenceLive:
			continue
		case unsure:
			l.Kind, l.Reason, l.Action = LeftoverUncertain, "no readable run record names this channel, but the Main has unreadable ones", "nothing"
		default:
			l.Kind, l.Reason = LeftoverOrphanChannel, "no run record names this channel and no Sub process holds it"
			ch, err := channel.OpenOwned(path)
			if err != nil {
				// Nothing here can archive what it cannot read: keep it.
				l.Kind, l.Reason, l.Action = LeftoverUncertain, l.Reason+", but it cannot be read: "+err.Error(), "nothing: inspect and delete it by hand"
				break
			}
			owner := ch.Manifest().StateDir
			ch.Close()
			switch {
			case owner == "":
				l.Kind, l.Reason, l.Action = LeftoverUncertain, l.Reason+" here, but an older facets made it without naming its state dir, whose record may own it", "nothing"
			case owner != rt.Store.absDir():
				continue // another state dir's run: not this gc's to judge
			}
		}
		out = append(out, l)
	}
	return out
}

// staleBindings are the Main's bindings whose run record is gone.
func (rt *Runtime) staleBindings(m string) []Leftover {
	dir := filepath.Join(rt.Store.mainDir(m), "bindings")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // none, or nothing gc could act on
	}
	var out []Leftover
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		var b Binding
		if _, err := readJSON(path, &b); err != nil {
			out = append(out, Leftover{Kind: LeftoverUncertain, MainSession: m, Path: path, Reason: err.Error(), Action: "nothing: fix or delete the binding by hand"})
			continue
		}
		if _, ok, err := rt.Store.LoadRun(m, b.RunID); ok || err != nil {
			continue
		}
		out = append(out, Leftover{Kind: LeftoverStaleBinding, MainSession: m, RunID: b.RunID, Profile: b.ProfileName, Path: path,
			Reason: "profile " + b.ProfileName + " is bound to run " + b.RunID + ", which no longer exists",
			Action: "delete the binding (the next /sub:" + b.ProfileName + " starts a new Sub)"})
	}
	return out
}

// release acts on one leftover under its Main's slot lock, recording the
// outcome in l; an error keeps what it was about.
func (rt *Runtime) release(ctx context.Context, l *Leftover) {
	var err error
	switch l.Kind {
	case LeftoverSubExited, LeftoverSurfaceGone, LeftoverNoChannel:
		err = rt.releaseRun(ctx, l)
	case LeftoverOrphanChannel:
		l.Archive, err = rt.releaseChannel(l.MainSession, l.RunID, l.Path, nil)
	case LeftoverStaleBinding:
		if _, ok, lerr := rt.Store.LoadRun(l.MainSession, l.RunID); ok || lerr != nil {
			return // its run came back (or cannot be read): not stale any more
		}
		if rerr := os.Remove(l.Path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("delete binding %s: %w", l.Path, rerr)
		}
	case LeftoverWorktree:
		err = rt.releaseWorktree(ctx, l)
	case LeftoverMainGone:
		err = rt.releaseMainLeftover(l)
	default:
		return
	}
	if err != nil {
		l.Error = err.Error()
		return
	}
	l.Released = true
}

// releaseRun closes a leftover run: its tab if the surface still shows it,
// its channel (archived first when it holds anything) and its record.
func (rt *Runtime) releaseRun(ctx context.Context, l *Leftover) error {
	r, ok, err := rt.Store.LoadRun(l.MainSession, l.RunID)
	if err != nil || !ok || !r.Open() {
		return err // released meanwhile
	}
	if l.Kind != LeftoverSurfaceGone {
		// The Sub is gone but its tab may be left (a shell, a dead pane, a
		// runtime dir removed under a running surface): close it when the
		// surface confirms it is still this run's.
		if s, serr := rt.surfaceOf(r); serr == nil && r.handle().TabID != "" {
			if own, _ := s.Owned(ctx, r.handle(), r.RunID); own == surface.TabPresent {
				if err := s.CloseTab(ctx, r.handle()); err != nil {
					return fmt.Errorf("close %s %s: %w", tabWord(s), r.handle().TabID, err)
				}
			}
		}
	}
	if l.Kind != LeftoverNoChannel {
		l.Archive, err = rt.releaseChannel(l.MainSession, r.RunID, r.ChannelDir, r)
		if err != nil {
			return err
		}
	} else if r.Persistent() && r.SubSessionID != "" {
		if l.Archive, err = rt.archiveRun(l.MainSession, r); err != nil {
			return err
		}
	}
	// The worktree outlives the Sub: an empty one goes, one with work stays
	// (and so does the record that shows it).
	rt.settleWorktree(ctx, r)
	if !r.Persistent() && !r.Manual() && !r.keepsWorktree() {
		return rt.Store.DeleteRun(r.MainSessionID, r.RunID)
	}
	r.ClosedAt = rt.now().UnixMilli()
	r.UpdatedAt = r.ClosedAt
	r.LaunchPID, r.LaunchError = 0, ""
	return rt.Store.SaveRun(r)
}

// worktreeLeftover is a closed run's kept worktree whose work is all
// elsewhere (see LeftoverWorktree); git is asked, so a Main's startup
// count leaves this kind out. A worktree git cannot inspect is uncertain.
func (rt *Runtime) worktreeLeftover(ctx context.Context, m string, r *Run, inUse func() map[string]*Run) (Leftover, bool) {
	l := Leftover{MainSession: m, RunID: r.RunID, Path: rt.Store.runPath(m, r.RunID)}
	if r.Open() || !r.keepsWorktree() || inUse()[r.Worktree.Path] != nil {
		return l, false // an open run (a resumed session) works in it
	}
	w := *r.Worktree
	s, err := rt.Git.Inspect(ctx, w)
	switch {
	case err != nil:
		l.Kind, l.Reason, l.Action = LeftoverUncertain, "cannot inspect worktree "+w.Path+": "+err.Error(), "nothing"
		return l, true
	case s.RepoMissing:
		l.Kind, l.Reason, l.Action = LeftoverUncertain, "the repository at "+w.Repo+" of worktree "+w.Path+" is gone, so git cannot say what the worktree holds", "nothing: look at the worktree, then remove it by hand"
		return l, true
	case len(s.Uncommitted) > 0:
		return l, false
	}
	if !s.BranchMissing {
		unique, err := rt.Git.UniqueCommits(ctx, w)
		if err != nil {
			l.Kind, l.Reason, l.Action = LeftoverUncertain, err.Error(), "nothing"
			return l, true
		}
		if len(unique) > 0 {
			return l, false
		}
	}
	l.Kind = LeftoverWorktree
	l.Reason = "the run is closed and its worktree " + w.Path + " holds nothing found nowhere else: no uncommitted changes, and every commit of branch " + w.Branch + " is on another branch or tag"
	l.Action = "remove the worktree and branch " + w.Branch
	if channelExists(r) || r.Persistent() || r.Manual() {
		l.Action += "; keep the run record"
	} else {
		l.Action += "; delete the run record"
	}
	return l, true
}

// releaseWorktree removes a LeftoverWorktree's worktree and branch (git's
// and facets' checks run again, under the repository lock) and the run
// record when nothing else keeps it.
func (rt *Runtime) releaseWorktree(ctx context.Context, l *Leftover) error {
	r, ok, err := rt.Store.LoadRun(l.MainSession, l.RunID)
	if err != nil || !ok || r.Open() || !r.keepsWorktree() || rt.worktreeUser(r) != nil {
		return err // released, or taken up again, meanwhile
	}
	if err := rt.Git.Remove(ctx, *r.Worktree, false); err != nil {
		return err
	}
	r.WorktreeRemoved = true
	r.UpdatedAt = rt.now().UnixMilli()
	if !channelExists(r) && !r.Persistent() && !r.Manual() {
		return rt.Store.DeleteRun(r.MainSessionID, r.RunID)
	}
	return rt.Store.SaveRun(r)
}

// releaseMainLeftover releases one leftover of a Main that can never be
// resumed: a binding, or a closed run's channel and record.
func (rt *Runtime) releaseMainLeftover(l *Leftover) error {
	if l.Profile != "" {
		if err := os.Remove(l.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete binding %s: %w", l.Path, err)
		}
		return nil
	}
	r, ok, err := rt.Store.LoadRun(l.MainSession, l.RunID)
	if err != nil || !ok || r.Open() {
		return err
	}
	if channelExists(r) {
		if l.Archive, err = rt.releaseChannel(l.MainSession, r.RunID, r.ChannelDir, r); err != nil {
			return err
		}
	}
	if r.Persistent() && !r.Manual() || r.keepsWorktree() {
		return nil
	}
	if r.Persistent() && l.Archive == "" {
		if l.Archive, err = rt.archiveRun(l.MainSession, r); err != nil {
			return err
		}
	}
	return rt.Store.DeleteRun(r.MainSessionID, r.RunID)
}

// releaseChannel archives the channel at dir when it holds unreceived
// files (or r is a persistent Sub's run) and removes it, all under its
// inbox locks; a channel a Sub holds or a writer is using is kept.
func (rt *Runtime) releaseChannel(m, runID, dir string, r *Run) (string, error) {
	ch, err := channel.OpenOwned(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	unlock, err := ch.LockInboxes()
	if err != nil {
		ch.Close()
		return "", err
	}
	if p, err := channel.SubPresence(dir); err != nil || p == channel.PresenceLive {
		unlock()
		ch.Close()
		if err == nil {
			err = errors.New("a Sub process holds the channel again")
		}
		return "", fmt.Errorf("keep %s: %w", dir, err)
	}
	n, err := ch.Unreceived()
	if err != nil {
		unlock()
		ch.Close()
		return "", err
	}
	archive := ""
	if n > 0 || r != nil && r.Persistent() {
		if archive, err = rt.newArchive(m, runID); err == nil {
			err = ch.CopyTo(archive)
		}
		if err == nil && r != nil {
			err = writeJSON(filepath.Join(archive, "run.json"), r)
		}
		if err != nil {
			unlock()
			ch.Close()
			return archive, fmt.Errorf("archive %s (the channel is kept): %w", dir, err)
		}
	}
	// Discard closes the inboxes, which releases their locks.
	return archive, ch.Discard()
}

// archiveRun keeps a run record whose channel is gone (a persistent Sub's
// session reference) in a new archive folder.
func (rt *Runtime) archiveRun(m string, r *Run) (string, error) {
	dir, err := rt.newArchive(m, r.RunID)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("archive run %s: %w", r.RunID, err)
	}
	return dir, writeJSON(filepath.Join(dir, "run.json"), r)
}

// newArchive names a fresh archive folder for a run: <state>/archive/<main>/<run>,
// with -2, -3, … when that exists. Its parents are created and must be
// real directories, not symlinks.
func (rt *Runtime) newArchive(m, runID string) (string, error) {
	parent := filepath.Join(rt.Store.Dir, archiveDirName, channel.Safe(m))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	for _, p := range []string{filepath.Dir(parent), parent} {
		fi, err := os.Lstat(p)
		if err != nil {
			return "", fmt.Errorf("archive: %w", err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("archive: %s is not a directory (a symlink?)", p)
		}
	}
	base := filepath.Join(parent, channel.Safe(runID))
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name += "-" + strconv.Itoa(i)
		}
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name, nil
		}
	}
}

// Census is what a starting Main says about the store in one line each:
// leftovers gc would release, and finished runs' worktrees that hold work.
type Census struct {
	Leftovers     int
	KeptWorktrees int
}

// Census counts, in one pass over local files (no surface and no git is
// asked), the leftovers of every Main in the store and under channelRoot
// that need no surface to be recognised, and the kept worktrees of
// finished runs.
func (s Store) Census(channelRoot string, now time.Time) Census {
	rt := &Runtime{Store: s, ChannelRoot: channelRoot, Now: func() time.Time { return now }}
	mains, err := rt.gcMains()
	if err != nil {
		return Census{}
	}
	var c Census
	for _, m := range mains {
		runs, err := s.Runs(m)
		var bad BadRecordsError
		unsure := errors.As(err, &bad)
		named := map[string]bool{}
		for _, r := range runs {
			named[channel.Safe(r.RunID)] = true
			if r.Open() && !holdsSlot(r) {
				c.Leftovers++
			}
			if !r.Open() && r.keepsWorktree() {
				c.KeptWorktrees++
			}
		}
		local := rt.orphanChannels(m, named, unsure)
		if gone, why, _ := rt.mainGone(m); gone {
			local = append(local, rt.mainLeftovers(m, runs, why)...)
		} else {
			local = append(local, rt.staleBindings(m)...)
		}
		for _, l := range local {
			if l.Kind != LeftoverUncertain {
				c.Leftovers++
			}
		}
	}
	return c
}

// CountLeftovers is Census's leftover count.
func (s Store) CountLeftovers(channelRoot string, now time.Time) int {
	return s.Census(channelRoot, now).Leftovers
}

// removeEmptyMain removes the Main's folder in the store once nothing is
// left in it; os.Remove refuses a folder that is not empty, so nothing
// else is ever removed.
func (s Store) removeEmptyMain(m string) {
	dir := s.mainDir(m)
	os.Remove(filepath.Join(dir, "runs"))
	os.Remove(filepath.Join(dir, "bindings"))
	os.Remove(dir)
}

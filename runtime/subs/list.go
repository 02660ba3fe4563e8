package subs

import (
	"context"
	"fmt"
	"github.com/facets-dev/facets/compiler/manifest"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/surface"
	"github.com/facets-dev/facets/runtime/worktree"
)

// OpenSub is one open run in a listing, with Herdr's live status.
type OpenSub struct {
	RunID              string `json:"runId"`
	SubSessionID       string `json:"subSessionId,omitempty"`
	Title              string `json:"title"`
	Profile            string `json:"profile"`
	SessionPersistence string `json:"sessionPersistence"`
	Origin             string `json:"origin,omitempty"`
	Purpose            string `json:"purpose,omitempty"`
	// Status is working, blocked, idle or unknown (Herdr cannot tell);
	// submitted, queued or gone (see StatusSubmitted); or launching while
	// the slot is reserved but the launch has not returned.
	Status         string `json:"status"`
	Adapter        string `json:"adapter"`
	ElapsedSeconds int64  `json:"elapsedSeconds"`
	// LaunchError is set for a run kept after a failed rollback.
	LaunchError string `json:"launchError,omitempty"`
	// Worktree is the Sub's own git worktree, for a worktree profile.
	Worktree *WorktreeInfo `json:"worktree,omitempty"`
}

// Resumable is a closed persistent Sub session that can be reopened.
type Resumable struct {
	SessionID          string `json:"sessionId"`
	SessionFile        string `json:"sessionFile,omitempty"`
	Title              string `json:"title"`
	Cwd                string `json:"cwd"`
	ModifiedAt         int64  `json:"modifiedAt"`
	ModifiedSecondsAgo int64  `json:"modifiedSecondsAgo"`
	Origin             string `json:"origin,omitempty"`
	ProfileName        string `json:"profileName,omitempty"`
	Purpose            string `json:"purpose,omitempty"`
	// Worktree is the session's worktree, which a resume reopens.
	Worktree *worktree.Worktree `json:"worktree,omitempty"`
	// runMain and runID name the closed run the session was read from,
	// which hands its worktree over to the run that resumes it.
	runMain, runID string
}

// Listing is the result of List.
type Listing struct {
	Open      []OpenSub   `json:"open"`
	Resumable []Resumable `json:"resumable"`
	// Problems names the run records that could not be read and were left
	// out, each with its path.
	Problems []string `json:"problems,omitempty"`
	// Hidden counts the open ephemeral runs left out because they are idle
	// or unknown (all shows them); each still holds a slot until closed.
	Hidden int `json:"hidden,omitempty"`
	// Worktrees are the kept worktrees of closed runs, of every Main: work
	// waiting for review, merge or discard.
	Worktrees []KeptWorktree `json:"worktrees"`
}

// Text renders the listing as the list_sub tool returns it to the model:
// open Subs first, then resumable sessions, or "no Sub sessions.". Values
// read from run records are escaped, so none can forge a line of it.
func (l Listing) Text() string {
	esc := termesc.Escape
	var b strings.Builder
	for _, p := range l.Problems {
		b.WriteString("! " + termesc.Escape(p) + "\n")
	}
	hidden := ""
	if l.Hidden > 0 {
		hidden = fmt.Sprintf("(%d idle Sub(s) not shown; each holds one of the %d slots until close_sub closes it: list_sub with all=true lists them)", l.Hidden, MaxOpenSubs)
	}
	if len(l.Open) == 0 && len(l.Resumable) == 0 && len(l.Worktrees) == 0 {
		if hidden != "" {
			return b.String() + "no busy Sub sessions.\n" + hidden
		}
		return b.String() + "no Sub sessions."
	}
	manual := false
	for _, o := range l.Open {
		fmt.Fprintf(&b, "- %s %s %s <%s, %s", esc(o.Status), esc(short(o.RunID)), esc(o.Title), esc(o.Profile), esc(o.SessionPersistence))
		if o.Origin == manifest.OriginManual {
			manual = true
			b.WriteString(", user-invoked specialist")
		}
		b.WriteString(">")
		if o.Worktree != nil {
			b.WriteString(" worktree " + esc(o.Worktree.Path) + " branch " + esc(o.Worktree.Branch))
		}
		if o.Purpose != "" {
			b.WriteString(" Purpose: " + esc(o.Purpose))
		}
		b.WriteString("\n")
	}
	for _, r := range l.Resumable {
		kind := "persistent, resumable"
		if r.ProfileName != "" {
			// delegate resumes only with the profile the session ran.
			kind = "profile " + esc(r.ProfileName) + ", " + kind
		}
		if r.Origin == manifest.OriginManual {
			manual = true
			kind = "user-invoked; resume via user command"
			if r.ProfileName != "" {
				kind = "user-invoked; resume via /sub:" + esc(r.ProfileName)
			}
		}
		fmt.Fprintf(&b, "- closed %s %s <%s> cwd=%s", esc(r.SessionID), esc(r.Title), kind, esc(r.Cwd))
		if r.Purpose != "" {
			b.WriteString(" Purpose: " + esc(r.Purpose))
		}
		b.WriteString("\n")
	}
	for _, k := range l.Worktrees {
		fmt.Fprintf(&b, "- kept worktree of closed run %s %s <%s>: %s (discard: facets close --run %s --discard)\n",
			esc(short(k.RunID)), esc(k.Title), esc(k.Profile), esc(k.Worktree.Summary), esc(short(k.RunID)))
	}
	if hidden != "" {
		b.WriteString(hidden + "\n")
	}
	if manual {
		b.WriteString("\n" + manifest.ManualMainGuidance + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// List shows the Main's open Subs with Herdr's live status and the closed
// persistent sessions it may resume. By default an ephemeral open run that
// is idle (its work finished) or unknown is left out; all shows every open
// run.
func (rt *Runtime) List(ctx context.Context, mainSessionID string, all bool) (Listing, error) {
	if mainSessionID == "" {
		return Listing{}, fmt.Errorf("Facets is not attached to an active Main session.")
	}
	l := Listing{Open: []OpenSub{}, Resumable: []Resumable{}, Worktrees: []KeptWorktree{}}
	runs, problems, err := usableRuns(rt.Store.Runs(mainSessionID))
	if err != nil {
		return Listing{}, err
	}
	now := rt.now()
	for _, r := range runs {
		rt.refresh(r)
		if !r.Open() {
			continue
		}
		status := string(surface.StatusUnknown)
		if r.Launching() {
			status = "launching"
		} else {
			status = rt.liveStatus(ctx, r)
		}
		if !all && !r.Persistent() && (status == string(surface.StatusIdle) || status == string(surface.StatusUnknown)) {
			l.Hidden++
			continue
		}
		l.Open = append(l.Open, OpenSub{
			RunID: r.RunID, SubSessionID: r.SubSessionID, Title: r.Title, Profile: r.ProfileName,
			SessionPersistence: r.SessionPersistence, Origin: r.Origin, Purpose: r.Purpose, Status: status,
			Adapter: r.adapter(), ElapsedSeconds: (now.UnixMilli() - r.CreatedAt) / 1000, LaunchError: r.LaunchError,
			Worktree: worktreeInfo(r.Worktree),
		})
	}
	res, _, err := rt.resumables(mainSessionID, true, &problems)
	if err != nil {
		return Listing{}, err
	}
	if l.Worktrees, err = rt.keptWorktrees(ctx, &problems); err != nil {
		return Listing{}, err
	}
	if l.Worktrees == nil {
		l.Worktrees = []KeptWorktree{}
	}
	slices.Sort(problems)
	l.Problems = slices.Compact(problems)
	for _, r := range res {
		r.ModifiedSecondsAgo = (now.UnixMilli() - r.ModifiedAt) / 1000
		l.Resumable = append(l.Resumable, r)
	}
	return l, nil
}

// Statuses List reports besides Herdr's own.
const (
	// StatusGone: Herdr no longer has this run's pane (closed, a restarted
	// server, or an id now used by someone else's tab). close releases the
	// run without touching Herdr.
	StatusGone = "gone"
	// StatusSubmitted: Herdr reports idle, but the Sub has not taken up its
	// first prompt yet (Herdr presses Enter 300 ms after agent prompt).
	StatusSubmitted = "submitted"
	// StatusQueued: Herdr reports idle, but a message for the Sub is still
	// in its inbox.
	StatusQueued = "queued"
)

// liveStatus is the run's status for a listing. Only a pane Herdr confirms
// as this run's is asked for its agent's state, and an idle agent counts as
// finished only when nothing handed to it is still waiting.
func (rt *Runtime) liveStatus(ctx context.Context, r *Run) string {
	h := r.handle()
	s, err := rt.surfaceOf(r)
	if h.TabID == "" || err != nil {
		return string(surface.StatusUnknown)
	}
	switch own, _ := s.Owned(ctx, h, r.RunID); own {
	case surface.TabGone:
		return StatusGone
	case surface.TabUncertain:
		return string(surface.StatusUnknown)
	}
	if !s.AgentAware() {
		return channelStatus(r)
	}
	st, err := s.State(ctx, h)
	if err != nil || st.Status != surface.StatusIdle {
		return string(st.Status)
	}
	if ch, err := openChannel(r); err == nil {
		defer ch.Close()
		if msgs, _, err := ch.Pending(channel.ToSub); err == nil && len(msgs) > 0 {
			return StatusQueued
		}
		if _, ok, err := ch.ActiveTurn(); err == nil && ok {
			return string(surface.StatusWorking)
		}
	}
	if h.PromptSeq != nil && *h.PromptSeq == st.Seq {
		return StatusSubmitted
	}
	return string(st.Status)
}

// channelStatus is the status of a Sub whose surface sees no agent, as the
// Sub reports it through its channel: submitted until its Pi has started
// (its session is recorded), queued while a message waits in its inbox,
// working while a turn runs, else idle; unknown without a channel.
func channelStatus(r *Run) string {
	ch, err := openChannel(r)
	if err != nil {
		return string(surface.StatusUnknown)
	}
	defer ch.Close()
	if _, ok, err := ch.Session(); err != nil {
		return string(surface.StatusUnknown)
	} else if !ok {
		return StatusSubmitted
	}
	if msgs, _, err := ch.Pending(channel.ToSub); err == nil && len(msgs) > 0 {
		return StatusQueued
	}
	if _, ok, err := ch.ActiveTurn(); err != nil {
		return string(surface.StatusUnknown)
	} else if ok {
		return string(surface.StatusWorking)
	}
	return string(surface.StatusIdle)
}

// resumables collects closed persistent Sub sessions, newest first:
// agent-invokable ones from every Main in the store, user-invoked ones only
// from mainSessionID (withManual), and none that is open in any Main or
// whose saved session file is gone.
// Unreadable run records are added to problems, or fail the call when
// problems is nil.
func (rt *Runtime) resumables(mainSessionID string, withManual bool, problems *[]string) ([]Resumable, map[string]bool, error) {
	mains, err := rt.Store.MainSessions()
	if err != nil {
		return nil, nil, err
	}
	own := rt.Store.mainDir(mainSessionID)
	open := map[string]bool{}
	latest := map[string]*Run{}
	for _, m := range mains {
		runs, err := rt.Store.Runs(m)
		if problems != nil {
			var bad []string
			runs, bad, err = usableRuns(runs, err)
			*problems = append(*problems, bad...)
		}
		if err != nil {
			return nil, nil, err
		}
		for _, r := range runs {
			if r.SubSessionID == "" {
				continue
			}
			if r.Open() {
				open[r.SubSessionID] = true
				continue
			}
			if !r.Persistent() || (r.Manual() && (!withManual || rt.Store.mainDir(r.MainSessionID) != own)) {
				continue
			}
			if prev := latest[r.SubSessionID]; prev == nil || prev.ClosedAt < r.ClosedAt {
				latest[r.SubSessionID] = r
			}
		}
	}
	var out []Resumable
	for id, r := range latest {
		if open[id] {
			continue
		}
		modified := r.ClosedAt
		if r.SubSessionFile != "" {
			fi, err := os.Stat(r.SubSessionFile)
			if err != nil {
				continue // the saved session is gone; it cannot be resumed
			}
			modified = fi.ModTime().UnixMilli()
		}
		out = append(out, Resumable{
			SessionID: id, SessionFile: r.SubSessionFile, Title: r.Title, Cwd: r.Cwd, ModifiedAt: modified,
			Origin: r.Origin, ProfileName: r.ProfileName, Purpose: r.Purpose, Worktree: r.Worktree,
			runMain: r.MainSessionID, runID: r.RunID,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ModifiedAt != out[j].ModifiedAt {
			return out[i].ModifiedAt > out[j].ModifiedAt
		}
		return out[i].SessionID < out[j].SessionID
	})
	return out, open, nil
}

// findResumable resolves a session id or unique prefix for a resume.
// Delegate resumes agent-invokable sessions only; a user command (manual)
// resumes its own binding's session by exact id.
func (rt *Runtime) findResumable(mainSessionID, ref string, manual bool, profile string) (Resumable, error) {
	all, open, err := rt.resumables(mainSessionID, manual, nil)
	if err != nil {
		return Resumable{}, err
	}
	if open[ref] {
		return Resumable{}, fmt.Errorf("Persistent Sub session '%s' is already open.", ref)
	}
	var match []Resumable
	for _, r := range all {
		if (r.Origin == manifest.OriginManual) != manual {
			continue
		}
		if r.SessionID == ref {
			return r, nil
		}
		if !manual && strings.HasPrefix(r.SessionID, ref) {
			match = append(match, r)
		}
	}
	switch len(match) {
	case 0:
		if manual {
			return Resumable{}, fmt.Errorf("The saved %s session '%s' is unavailable; refusing to create a replacement session.", profile, ref)
		}
		return Resumable{}, fmt.Errorf("No persistent Sub session matches '%s'.", ref)
	case 1:
		return match[0], nil
	default:
		return Resumable{}, fmt.Errorf("Persistent Sub session id '%s' is ambiguous.", ref)
	}
}

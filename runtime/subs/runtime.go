// Package subs runs compiled profiles as Sub Pis in Herdr: it delegates
// (launches or resumes) Subs, talks to them and interrupts them through
// their file channels, closes them, lists them, and keeps the Main's runs
// and profile-command bindings on disk so separate CLI processes, a
// reloaded Main and a resumed Main all see the same Subs.
package subs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/launch"
	"github.com/facets-dev/facets/runtime/surface"
	"github.com/facets-dev/facets/runtime/worktree"
)

// MaxOpenSubs is how many Subs one Main may have open at once.
const MaxOpenSubs = 4

// DefaultCloseReason is written to close.json when the caller gives none.
const DefaultCloseReason = "The Main closed the Sub session."

// tokenFileName is the capability token's file inside the channel
// directory; the Sub reads it through PI_FACETS_TOKEN_FILE, and removing
// the channel removes the token with it.
const tokenFileName = "token"

// Runtime executes Sub operations for Main sessions.
type Runtime struct {
	// Surface is where new Subs open (herdr.CLI or tmux.CLI, chosen by
	// internal/runtimeenv).
	Surface surface.Surface
	// Surfaces are the other adapters by Name, for the runs they opened: a
	// run is always listed and closed through its own adapter.
	Surfaces map[string]surface.Surface
	// NoSurface, when Surface is nil, says why no Sub can open here and how
	// to get a surface; delegate and invoke fail with it.
	NoSurface error
	// Store holds runs and bindings.
	Store Store
	// ChannelRoot is where channels are created (channel.RuntimeRoot()).
	ChannelRoot string
	// Bridge is the absolute path of the Facets Pi extension.
	Bridge string
	// AgentDir is Pi's agent dir; Herdr's Pi lifecycle extension is loaded
	// from <AgentDir>/extensions/herdr-agent-state.ts when present.
	AgentDir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Git runs git for worktree profiles.
	Git worktree.Git
	// WorktreeDir is where Subs' worktrees are made (DefaultWorktreeDir).
	WorktreeDir string
}

// surfaceOf is the adapter that opened r: Surface, or the one of Surfaces
// the run names.
func (rt *Runtime) surfaceOf(r *Run) (surface.Surface, error) {
	name := r.adapter()
	if rt.Surface != nil && rt.Surface.Name() == name {
		return rt.Surface, nil
	}
	if s, ok := rt.Surfaces[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("run %s lives in %s, which this facets cannot reach", r.RunID, name)
}

func (rt *Runtime) now() time.Time {
	if rt.Now != nil {
		return rt.Now()
	}
	return time.Now()
}

// Delegation is what Delegate and Invoke did.
type Delegation struct {
	// Action is "created", "resumed" or (Invoke only) "queued".
	Action             string   `json:"action"`
	RunID              string   `json:"runId"`
	Title              string   `json:"title"`
	Profile            string   `json:"profile"`
	Adapter            string   `json:"adapter"`
	Tools              []string `json:"tools"`
	Skills             []string `json:"skills"`
	SessionPersistence string   `json:"sessionPersistence"`
	SessionID          string   `json:"sessionId,omitempty"`
	Origin             string   `json:"origin,omitempty"`
	TabID              string   `json:"tabId,omitempty"`
	PaneID             string   `json:"paneId,omitempty"`
	MessageID          string   `json:"messageId,omitempty"` // Invoke "queued" only
	// Worktree is the Sub's own git worktree, for a worktree profile.
	Worktree *WorktreeInfo `json:"worktree,omitempty"`
	// Notes are one-line remarks on the launch (a worktree's missing
	// uncommitted changes, copied files).
	Notes []string `json:"notes,omitempty"`
}

// Text is the delegate tool's result text as the model sees it.
func (d Delegation) Text() string {
	verb := "Created"
	if d.Action == "resumed" {
		verb = "Resumed"
	}
	s := fmt.Sprintf("%s Sub: %s (profile %s, run %s", verb, termesc.Escape(d.Title), termesc.Escape(d.Profile), short(d.RunID))
	if d.SessionID != "" {
		s += ", session " + termesc.Escape(d.SessionID)
	}
	s += ")."
	if w := d.Worktree; w != nil {
		s += fmt.Sprintf("\nIt works in its own git worktree %s on branch %s (from %s).", termesc.Escape(w.Path), termesc.Escape(w.Branch), worktree.ShortCommit(w.Base))
	}
	for _, n := range d.Notes {
		s += "\n" + termesc.Escape(n)
	}
	return s
}

// RetainedRunError is a failed launch whose tab rollback failed too: the
// run is kept, holding its slot, until Close succeeds for RunID.
type RetainedRunError struct {
	RunID string
	Err   error
	// Persist is why the run record could not be saved, if it could not.
	Persist error
}

// Error renders the delegate failure text the model sees, with the run id
// it needs to close or retry the retained run.
func (e *RetainedRunError) Error() string {
	persist := ""
	if e.Persist != nil {
		persist = fmt.Sprintf(" Recovery state could not be persisted: %v.", e.Persist)
	}
	return fmt.Sprintf("%v Sub run %s remains open.%s Use close_sub to retry.", e.Err, e.RunID, persist)
}

// Unwrap exposes the launch failure (a *launch.CleanupError) to errors.As.
func (e *RetainedRunError) Unwrap() error { return e.Err }

// DelegateRequest asks for a new Sub, or for a persistent one to resume.
type DelegateRequest struct {
	Manifest      *manifest.Manifest
	MainSessionID string
	Profile       string
	Title         string
	Task          string
	// Cwd is resolved against the Manifest's cwd (the Main's); ignored on resume.
	Cwd string
	// ResumeSessionID is an exact id or a unique prefix of a closed
	// persistent Sub session.
	ResumeSessionID string
	// Manual marks a user profile command; only Invoke sets it.
	Manual bool
	// ToolSources is the Main Pi's tool provenance by tool name. When set,
	// the Sub also loads the extensions owning the profile's tools; nil
	// launches the compiled profile as it is.
	ToolSources map[string]launch.ToolSource
}

// Delegate launches a Sub for an agent-invokable profile, or resumes a
// closed persistent Sub session. It takes one of the Main's MaxOpenSubs
// slots; a failed launch whose tab was rolled back frees it again.
func (rt *Runtime) Delegate(ctx context.Context, req DelegateRequest) (Delegation, error) {
	p, err := req.profile("delegate")
	if err != nil {
		return Delegation{}, err
	}
	if !req.Manual && !p.AgentInvokable {
		return Delegation{}, fmt.Errorf("'%s' is user-invoked only; run /sub:%s", p.Name, p.Name)
	}
	if p, err = withToolExtensions(p, req.ToolSources); err != nil {
		return Delegation{}, err
	}
	return rt.delegate(ctx, req, p)
}

// delegate launches or resumes p, the request's profile with its tool
// extensions already resolved; req.Profile and req.ToolSources are not read.
func (rt *Runtime) delegate(ctx context.Context, req DelegateRequest, p manifest.Profile) (Delegation, error) {
	title := surface.NormalizeTitle(req.Title)
	task := req.Task
	if req.Manual {
		title = surface.NormalizeTitle(p.Name)
		task = launch.ManualTask(p.Name, req.Task)
	}
	cwd, resumeID, err := rt.delegateCwd(req, p)
	if err != nil {
		return Delegation{}, err
	}
	if rt.Surface == nil {
		if rt.NoSurface != nil {
			return Delegation{}, rt.NoSurface
		}
		return Delegation{}, errors.New("Facets has no surface to open a Sub in.")
	}
	surfaceNotes, err := rt.Surface.Check(ctx)
	if err != nil {
		if errors.Is(err, surface.ErrUnavailable) {
			return Delegation{}, err // already one sentence that says where to get the surface
		}
		return Delegation{}, fmt.Errorf("Facets cannot open a Sub in %s: %w", rt.Surface.Name(), err)
	}
	var plan *plannedWorktree
	var resumed *Resumable
	if resumeID == "" {
		if plan, err = rt.planWorktree(ctx, p, cwd); err != nil {
			return Delegation{}, err
		}
	} else if resumed, err = rt.resumedWorktree(req, p, resumeID); err != nil {
		return Delegation{}, err
	}
	run, ch, err := rt.reserve(req, p, title, task, cwd, resumeID, !rt.Surface.AgentAware())
	if err != nil {
		return Delegation{}, err
	}
	defer ch.Close()
	var notes []string
	switch {
	case plan != nil:
		cwd, notes, err = rt.makeWorktree(ctx, plan, run)
	case resumed != nil && resumed.Worktree != nil:
		err = rt.reopenWorktree(ctx, resumed.Worktree, run)
	}
	if err == nil && run.Worktree != nil {
		run.Cwd = cwd
		err = rt.Store.SaveRun(run)
	}
	if err != nil {
		if rerr := rt.rollback(ctx, run, ch, plan != nil); rerr != nil {
			return Delegation{}, fmt.Errorf("%w (releasing run %s: %v)", err, run.RunID, rerr)
		}
		return Delegation{}, err
	}
	tokenFile := filepath.Join(ch.Dir(), tokenFileName)
	spec := launch.Spec{
		Profile:         p,
		Bridge:          rt.Bridge,
		HerdrAgentState: rt.herdrAgentState(),
		Trusted:         req.Manifest.Trust.Trusted,
		Title:           title,
		Manual:          req.Manual,
		ResumeSessionID: resumeID,
	}
	h, err := launch.OpenTab(ctx, rt.Surface, launch.TabRequest{
		RunID:     run.RunID,
		Title:     title,
		Cwd:       cwd,
		Env:       launch.Env(ch.Dir()),
		TokenFile: tokenFile,
		Args:      spec.Args(),
		Metadata:  surface.Metadata{MainSession: req.MainSessionID, RunID: run.RunID, Profile: p.Name},
		// The task is in the channel manifest; see launch.KickoffPrompt.
		Prompt: launch.KickoffPrompt,
	})
	var cleanup *launch.CleanupError
	switch {
	case errors.As(err, &cleanup):
		run.LaunchPID = 0
		run.LaunchError = err.Error()
		run.Surface = &Surface{Adapter: rt.Surface.Name(), Handle: cleanup.Handle}
		run.UpdatedAt = rt.now().UnixMilli()
		return Delegation{}, &RetainedRunError{RunID: run.RunID, Err: err, Persist: rt.Store.SaveRun(run)}
	case err != nil:
		// The tab is gone (or never existed): release the slot, the channel
		// and the worktree, which nothing has written to.
		rerr := rt.rollback(ctx, run, ch, plan != nil)
		if rerr != nil {
			return Delegation{}, fmt.Errorf("delegate: %w (releasing run %s: %v)", err, run.RunID, rerr)
		}
		return Delegation{}, fmt.Errorf("delegate: %w", err)
	}
	run.LaunchPID = 0
	run.Surface = &Surface{Adapter: rt.Surface.Name(), Handle: h}
	run.UpdatedAt = rt.now().UnixMilli()
	if err := rt.Store.SaveRun(run); err != nil {
		return Delegation{}, &RetainedRunError{RunID: run.RunID, Err: errors.New("The Sub started but its run could not be saved."), Persist: err}
	}
	if resumed != nil && resumed.Worktree != nil {
		rt.handOverWorktree(resumed)
	}
	d := delegation(run)
	d.Notes = append(surfaceNotes, notes...)
	d.Action = "created"
	if resumeID != "" {
		d.Action = "resumed"
		d.SessionID = resumeID
	}
	return d, nil
}

func delegation(run *Run) Delegation {
	d := Delegation{
		RunID: run.RunID, Title: run.Title, Profile: run.ProfileName, Adapter: run.adapter(),
		Tools: nonNil(run.Tools), Skills: nonNil(run.Skills), SessionPersistence: run.SessionPersistence,
		SessionID: run.SubSessionID, Origin: run.Origin,
	}
	if run.Surface != nil {
		d.TabID, d.PaneID = run.Surface.TabID, run.Surface.PaneID
	}
	d.Worktree = worktreeInfo(run.Worktree)
	return d
}

// withToolExtensions adds to p's launch snapshot the extensions that own
// its tools according to the Main's tool sources; nil sources change nothing.
func withToolExtensions(p manifest.Profile, sources map[string]launch.ToolSource) (manifest.Profile, error) {
	if sources == nil {
		return p, nil
	}
	exts, err := launch.ResolveExtensions(p.Name, p.Launch.Tools, sources)
	if err != nil {
		return p, err
	}
	merged := slices.Clone(p.Launch.Extensions)
	for _, e := range exts {
		if !slices.Contains(merged, e) {
			merged = append(merged, e)
		}
	}
	p.Launch.Extensions = merged
	return p, nil
}

// herdrAgentState is Herdr's Pi lifecycle extension, which a Sub in Herdr
// loads so Herdr sees its agent's state; no other surface reads it.
func (rt *Runtime) herdrAgentState() string {
	if rt.Surface.Name() != "herdr" {
		return ""
	}
	return launch.HerdrAgentState(rt.AgentDir)
}

// delegateCwd picks the Sub's working directory: on resume the saved
// session's cwd, otherwise req.Cwd resolved against the Main's cwd.
func (rt *Runtime) delegateCwd(req DelegateRequest, p manifest.Profile) (cwd, resumeID string, err error) {
	if req.ResumeSessionID != "" {
		if p.Launch.SessionPersistence != "persistent" {
			return "", "", fmt.Errorf("Profile '%s' must use sessionPersistence 'persistent' when resuming a Sub session.", p.Name)
		}
		s, err := rt.findResumable(req.MainSessionID, req.ResumeSessionID, req.Manual, p.Name)
		if err != nil {
			return "", "", err
		}
		return s.Cwd, s.SessionID, nil
	}
	cwd = req.Cwd
	if cwd == "" {
		cwd = req.Manifest.Cwd
	} else if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(req.Manifest.Cwd, cwd)
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", "", fmt.Errorf("Sub working directory %s is not a directory.", cwd)
	}
	return filepath.Clean(cwd), "", nil
}

// reserve takes a slot under the Main's lock: it refreshes the Main's runs
// (a Sub closed by hand frees its slot), counts the open ones, and creates
// the channel, token file and a Launching run record.
func (rt *Runtime) reserve(req DelegateRequest, p manifest.Profile, title, task, cwd, resumeID string, selfStart bool) (*Run, *channel.Channel, error) {
	unlock, err := rt.Store.Lock(req.MainSessionID, "slots")
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	runs, err := rt.Store.Runs(req.MainSessionID)
	if err != nil {
		return nil, nil, err
	}
	var open []*Run
	for _, r := range runs {
		rt.refresh(r)
		if r.Open() && holdsSlot(r) { // a Sub that is provably gone frees its slot at once
			open = append(open, r)
			if resumeID != "" && r.SubSessionID == resumeID {
				return nil, nil, fmt.Errorf("Persistent Sub session '%s' is already open.", resumeID)
			}
		}
	}
	if len(open) >= MaxOpenSubs {
		return nil, nil, slotsFull(open)
	}
	profile, err := launch.ResolvedProfile(p)
	if err != nil {
		return nil, nil, err
	}
	m := channel.Manifest{RunID: channel.NewID(), MainSessionID: req.MainSessionID, Title: title, Task: task, Cwd: cwd, Profile: profile, SelfStart: selfStart, StateDir: rt.Store.absDir()}
	if req.Manual {
		m.Origin = manifest.OriginManual
	}
	ch, err := channel.Create(rt.ChannelRoot, m)
	if err != nil {
		return nil, nil, fmt.Errorf("delegate: %w", err)
	}
	m = ch.Manifest()
	if err := writeTokenFile(filepath.Join(ch.Dir(), tokenFileName), m.Token); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("delegate: %w", err), ch.Remove(), ch.Close())
	}
	now := rt.now().UnixMilli()
	run := &Run{
		Version: RunVersion, RunID: m.RunID, MainSessionID: req.MainSessionID, Title: title, Cwd: cwd,
		ProfileName: p.Name, Origin: m.Origin, SessionPersistence: p.Launch.SessionPersistence,
		ChannelDir: ch.Dir(), CreatedAt: now, UpdatedAt: now, SubSessionID: resumeID,
		Tools: p.Launch.Tools, Skills: p.Launch.Skills, LaunchPID: os.Getpid(),
	}
	if req.Manual {
		run.Purpose = p.Description
	}
	if err := rt.Store.SaveRun(run); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("delegate: %w", err), ch.Remove(), ch.Close())
	}
	return run, ch, nil
}

// writeTokenFile creates the owner-only token file; O_EXCL because a
// channel's token is written exactly once.
func writeTokenFile(path, token string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	_, werr := f.WriteString(token + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write token file %s: %w", path, werr)
	}
	return nil
}

// openChannel opens a run's channel with the token kept beside it.
func openChannel(run *Run) (*channel.Channel, error) {
	token, err := channel.ReadToken(filepath.Join(run.ChannelDir, tokenFileName), "")
	if err != nil {
		return nil, fmt.Errorf("open channel of run %s: %w", run.RunID, err)
	}
	return channel.Open(run.ChannelDir, token)
}

func channelExists(run *Run) bool {
	_, err := os.Stat(run.ChannelDir)
	return !errors.Is(err, fs.ErrNotExist)
}

// refresh brings a run up to date with its channel: the Sub's session identity, a manual closure of the tab
// (closed.json), and the removal of a closed channel once the Main has
// drained its messages. Problems leave the run as it was; they are the
// channel watcher's to report.
func (rt *Runtime) refresh(run *Run) {
	if run.Launching() {
		if processAlive(run.LaunchPID) {
			return
		}
		// The launching process died mid-launch: nobody will finish or roll
		// back this run, so it becomes a retained run that close releases.
		run.LaunchPID = 0
		run.LaunchError = "The launching process exited before the launch finished; a Herdr tab may be left open."
		run.UpdatedAt = rt.now().UnixMilli()
		rt.Store.SaveRun(run)
		return
	}
	changed, wasOpen := false, run.Open()
	// A missing channel fails to open like any other; there is nothing to read.
	if ch, err := openChannel(run); err == nil {
		if s, ok, err := ch.Session(); err == nil && ok && (s.SessionID != run.SubSessionID || s.SessionFile != run.SubSessionFile) {
			run.SubSessionID, run.SubSessionFile = s.SessionID, s.SessionFile
			changed = true
		}
		if c, ok, err := ch.Closed(); err == nil && ok && run.Open() {
			run.ClosedAt = c.CreatedAt
			if run.ClosedAt == 0 {
				run.ClosedAt = rt.now().UnixMilli()
			}
			changed = true
		}
		if !run.Open() {
			if msgs, problems, err := ch.Pending(channel.ToMain); err == nil && len(msgs) == 0 && len(problems) == 0 {
				if ch.Remove() == nil {
					changed = true
				}
			}
		}
		ch.Close()
	}
	if !changed {
		return
	}
	run.UpdatedAt = rt.now().UnixMilli()
	if wasOpen && !run.Open() {
		rt.settleWorktree(context.Background(), run)
	}
	if !run.Open() && !channelExists(run) && !run.Persistent() && !run.Manual() && !run.keepsWorktree() {
		rt.Store.DeleteRun(run.MainSessionID, run.RunID)
		return
	}
	rt.Store.SaveRun(run)
}

// findOpen resolves a run id or unique prefix among the Main's open runs.
func (rt *Runtime) findOpen(mainSessionID, ref string) (*Run, error) {
	if mainSessionID == "" {
		return nil, errors.New("Facets is not attached to an active Main session.")
	}
	// A corrupt record of another run must not block this one; it only
	// matters when nothing matches, so the error can name it.
	runs, problems, err := usableRuns(rt.Store.Runs(mainSessionID))
	if err != nil {
		return nil, err
	}
	var match []*Run
	for _, r := range runs {
		rt.refresh(r)
		if !r.Open() || ref == "" {
			continue
		}
		if r.RunID == ref {
			return r, nil
		}
		if strings.HasPrefix(r.RunID, ref) {
			match = append(match, r)
		}
	}
	switch len(match) {
	case 0:
		if len(problems) > 0 {
			return nil, fmt.Errorf("Unknown Sub '%s'. It may be one of the unreadable run records: %s", ref, strings.Join(problems, "; "))
		}
		return nil, fmt.Errorf("Unknown Sub '%s'.", ref)
	case 1:
		return match[0], nil
	default:
		return nil, fmt.Errorf("Ambiguous Sub prefix '%s'. Use a longer run ID.", ref)
	}
}

// findLaunched is findOpen for an operation that needs the Sub's launch to
// have finished: a run still launching is refused, with advice added to
// the refusal ("." when there is nothing to add).
func (rt *Runtime) findLaunched(mainSessionID, ref, advice string) (*Run, error) {
	run, err := rt.findOpen(mainSessionID, ref)
	if err != nil {
		return nil, err
	}
	if run.Launching() {
		return nil, fmt.Errorf("Sub '%s' is still launching%s", run.Title, advice)
	}
	return run, nil
}

// withChannel opens the channel of the run that findOpen or findLaunched
// returned, passing their error on; the caller closes the channel.
func withChannel(run *Run, err error) (*Run, *channel.Channel, error) {
	if err != nil {
		return nil, nil, err
	}
	ch, err := openChannel(run)
	if err != nil {
		return nil, nil, err
	}
	return run, ch, nil
}

// Message is a talk queued for a Sub.
type Message struct {
	RunID     string `json:"runId"`
	Title     string `json:"title"`
	MessageID string `json:"messageId"`
	Sequence  int64  `json:"sequence"`
}

// Text is the talk tool's result text as the model sees it.
func (m Message) Text() string { return "Message queued for Sub: " + termesc.Escape(m.Title) }

// Talk queues one message for an open Sub of the Main; ref is a run id or
// a unique prefix. Queuing is not acceptance: the Sub acknowledges later.
func (rt *Runtime) Talk(mainSessionID, ref, text string) (Message, error) {
	run, ch, err := withChannel(rt.findLaunched(mainSessionID, ref, "."))
	if err != nil {
		return Message{}, err
	}
	defer ch.Close()
	msg, err := ch.Send(channel.ToSub, text)
	if err != nil {
		return Message{}, fmt.Errorf("talk to Sub %s: %w", run.Title, err)
	}
	return Message{RunID: run.RunID, Title: run.Title, MessageID: msg.ID, Sequence: msg.Sequence}, nil
}

// Interruption is a requested cancellation of one Sub turn.
type Interruption struct {
	RunID  string `json:"runId"`
	Title  string `json:"title"`
	TurnID string `json:"turnId"`
}

// Text is the interrupt_sub tool's result text as the model sees it.
func (i Interruption) Text() string {
	return "Requested interruption of Sub: " + termesc.Escape(i.Title) + ". The Sub session remains open."
}

// Interrupt asks an open Sub to stop its current turn. The request names
// the turn read from active-turn.json, and the Sub ignores it unless that
// turn is still the active one, so a late request cannot cancel later work.
func (rt *Runtime) Interrupt(mainSessionID, ref string) (Interruption, error) {
	run, ch, err := withChannel(rt.findOpen(mainSessionID, ref))
	if err != nil {
		return Interruption{}, err
	}
	defer ch.Close()
	turn, ok, err := ch.ActiveTurn()
	if err != nil {
		return Interruption{}, fmt.Errorf("interrupt Sub %s: %w", run.Title, err)
	}
	if !ok {
		return Interruption{}, fmt.Errorf("Sub '%s' has no active turn to interrupt.", run.Title)
	}
	if err := ch.RequestInterrupt(turn); err != nil {
		return Interruption{}, fmt.Errorf("interrupt Sub %s: %w", run.Title, err)
	}
	return Interruption{RunID: run.RunID, Title: run.Title, TurnID: turn.TurnID}, nil
}

// Closure is a closed Sub.
type Closure struct {
	RunID string `json:"runId"`
	Title string `json:"title"`
	// Retained is true while the channel is kept for undelivered Sub→Main
	// messages; the run no longer holds a slot.
	Retained bool `json:"retained"`
	// Worktree is the Sub's worktree: removed when it held no work, else
	// kept with its branch, commits ahead, changed files and uncommitted changes.
	Worktree *WorktreeInfo `json:"worktree,omitempty"`
}

// Text is the close_sub tool's result text as the model sees it.
func (c Closure) Text() string {
	s := "Closed Sub: " + termesc.Escape(c.Title)
	if w := c.Worktree; w != nil {
		s += "\nWorktree: " + termesc.Escape(w.Summary)
		if st := w.State; !w.Removed && st != nil {
			for _, l := range st.Changed {
				s += "\n  " + termesc.Escape(l)
			}
			for _, l := range st.Uncommitted {
				s += "\n  uncommitted: " + termesc.Escape(l)
			}
			if st.Ahead > 0 {
				s += fmt.Sprintf("\nReview with git diff %s...%s; merge with git merge %s.", worktree.ShortCommit(w.Base), termesc.Escape(w.Branch), termesc.Escape(w.Branch))
			}
		}
	}
	return s
}

// Close writes close.json, closes the Sub's tab and checks Herdr's answer.
// If Herdr fails, the run stays open with its channel intact so Close can be
// retried; this is also how a run kept after a failed rollback is released.
func (rt *Runtime) Close(ctx context.Context, mainSessionID, ref, reason string) (Closure, error) {
	if reason == "" {
		reason = DefaultCloseReason
	}
	unlock, err := rt.Store.Lock(mainSessionID, "slots")
	if err != nil {
		return Closure{}, err
	}
	defer unlock()
	run, err := rt.findLaunched(mainSessionID, ref, "; close it once the launch has finished.")
	if err != nil {
		return Closure{}, err
	}
	ch, chErr := openChannel(run)
	if chErr == nil {
		defer ch.Close()
		// This error is ignored: close.json only asks the Sub to wind down,
		// and the tab close below is what actually stops it.
		_ = ch.RequestClose(reason)
	}
	// Tab ids restart in a fresh Herdr server, so the stored tab is closed
	// only once Herdr confirms it still holds this run's pane; a run whose
	// pane is gone is released without touching Herdr.
	if h := run.handle(); h.TabID != "" {
		s, err := rt.surfaceOf(run)
		if err != nil {
			return Closure{}, fmt.Errorf("close Sub %s (run %s stays open): %w", run.Title, run.RunID, err)
		}
		own, err := s.Owned(ctx, h, run.RunID)
		switch {
		case own == surface.TabPresent:
			if err := s.CloseTab(ctx, h); err != nil {
				return Closure{}, fmt.Errorf("close Sub %s (run %s stays open): %w", run.Title, run.RunID, err)
			}
		case own == surface.TabUncertain:
			return Closure{}, fmt.Errorf("close Sub %s (run %s stays open): cannot confirm tab %s is still this Sub's: %w", run.Title, run.RunID, h.TabID, err)
		}
	}
	run.ClosedAt = rt.now().UnixMilli()
	run.UpdatedAt = run.ClosedAt
	run.LaunchError = ""
	retained := false
	if chErr == nil {
		if s, ok, err := ch.Session(); err == nil && ok {
			run.SubSessionID, run.SubSessionFile = s.SessionID, s.SessionFile
		}
		if err := ch.MarkClosed(reason); err != nil {
			return Closure{}, fmt.Errorf("close Sub %s: the tab is closed but closed.json was not written: %w", run.Title, err)
		}
		msgs, problems, err := ch.Pending(channel.ToMain)
		if err == nil && len(msgs) == 0 && len(problems) == 0 {
			if err := ch.Remove(); err != nil {
				retained = true
			}
		} else {
			retained = true
		}
	}
	wt := rt.settleWorktree(ctx, run)
	if !retained && !run.Persistent() && !run.Manual() && !run.keepsWorktree() {
		if err := rt.Store.DeleteRun(mainSessionID, run.RunID); err != nil {
			return Closure{}, err
		}
	} else if err := rt.Store.SaveRun(run); err != nil {
		return Closure{}, err
	}
	return Closure{RunID: run.RunID, Title: run.Title, Retained: retained, Worktree: wt}, nil
}

// processAlive reports whether pid names a running process; EPERM means it
// exists under another user.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// profile checks the parts of a request that delegate (or invoke, op) needs
// first, the Main session and the manifest, and finds the requested profile.
func (req DelegateRequest) profile(op string) (manifest.Profile, error) {
	if req.MainSessionID == "" {
		return manifest.Profile{}, errors.New("Facets is not attached to an active Main session.")
	}
	if req.Manifest == nil {
		return manifest.Profile{}, fmt.Errorf("%s: no compiled manifest", op)
	}
	return findProfile(req.Manifest, req.Profile)
}

func findProfile(m *manifest.Manifest, name string) (manifest.Profile, error) {
	for _, p := range m.Profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return manifest.Profile{}, fmt.Errorf("Unknown profile '%s'.", name)
}

// slotsFull is the refusal of a launch when every slot is taken: it names
// the open Subs (an idle one holds its slot too, though list_sub leaves it
// out by default) and how to free one.
func slotsFull(open []*Run) error {
	var subs []string
	for _, r := range open {
		subs = append(subs, fmt.Sprintf("%s '%s' <%s>", short(r.RunID), termesc.Escape(r.Title), termesc.Escape(r.ProfileName)))
	}
	return fmt.Errorf("Facets allows at most %d open Subs. Open now: %s. Close one with close_sub (runId) to free its slot; list_sub with all=true shows them with their status, idle ones included.",
		MaxOpenSubs, strings.Join(subs, ", "))
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

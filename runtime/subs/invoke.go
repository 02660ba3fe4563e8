package subs

import (
	"context"
	"errors"
	"fmt"

	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/launch"
	"github.com/facets-dev/facets/runtime/surface"
)

// Invoke runs a user profile command (/sub:<profile> [task]) with the
// reference's binding rules: the Main session and profile are bound to one
// run; an open bound Sub gets the task as a message (no new slot), a closed
// persistent one is resumed, otherwise a new Sub is created and bound. A
// binding it cannot verify is an error, never a silent replacement. The
// request is a delegate's; its title, cwd and session to resume come from
// the binding, so they must be empty.
func (rt *Runtime) Invoke(ctx context.Context, req DelegateRequest) (Delegation, error) {
	if req.Title != "" || req.Cwd != "" || req.ResumeSessionID != "" {
		return Delegation{}, errors.New("invoke: the title, working directory and session come from the profile binding")
	}
	p, err := req.profile("invoke")
	if err != nil {
		return Delegation{}, err
	}
	// Tool provenance is checked before any binding decision, so a profile
	// whose tools cannot reach a Sub is refused even when the task would
	// only be queued to an open Sub.
	if p, err = withToolExtensions(p, req.ToolSources); err != nil {
		return Delegation{}, err
	}
	// One invocation per profile at a time, so two commands cannot both
	// decide to create the Sub.
	unlock, err := rt.Store.Lock(req.MainSessionID, "invoke-"+channel.Safe(p.Name))
	if err != nil {
		return Delegation{}, err
	}
	defer unlock()
	run, err := rt.boundRun(req.MainSessionID, p.Name)
	if err != nil {
		return Delegation{}, err
	}
	if run != nil {
		rt.refresh(run)
	}
	if run != nil && run.Open() {
		reuse, err := rt.checkReusable(ctx, run)
		if err != nil {
			return Delegation{}, err
		}
		if reuse {
			return rt.queueInvocation(run, p.Name, req.Task)
		}
	}
	dreq := DelegateRequest{Manifest: req.Manifest, MainSessionID: req.MainSessionID, Task: req.Task, Manual: true}
	if run != nil && run.Persistent() {
		if p.Launch.SessionPersistence != "persistent" {
			return Delegation{}, errors.New("This profile already has a persistent binding; keep sessionPersistence set to persistent to reuse it.")
		}
		if run.SubSessionID == "" {
			return Delegation{}, errors.New("The previous Sub session ID was not recorded; refusing to create a replacement session.")
		}
		dreq.ResumeSessionID = run.SubSessionID
	}
	d, err := rt.delegate(ctx, dreq, p)
	if err != nil {
		return Delegation{}, err
	}
	if err := rt.Store.SaveBinding(Binding{MainSessionID: req.MainSessionID, ProfileName: p.Name, RunID: d.RunID}); err != nil {
		return d, fmt.Errorf("the Sub %s started but its binding could not be saved: %w", d.RunID, err)
	}
	return d, nil
}

// boundRun finds the run a profile is bound to: the saved binding, or else
// the only open manual run of the profile. nil means none.
func (rt *Runtime) boundRun(mainSessionID, profile string) (*Run, error) {
	b, ok, err := rt.Store.LoadBinding(mainSessionID, profile)
	if err != nil {
		return nil, fmt.Errorf("The saved profile binding is unavailable; refusing to create a replacement session: %w", err)
	}
	if ok {
		run, found, err := rt.Store.LoadRun(mainSessionID, b.RunID)
		if err != nil || !found || run.ProfileName != profile || !run.Manual() {
			return nil, errors.New("The saved profile binding is unavailable; refusing to create a replacement session.")
		}
		return run, nil
	}
	runs, err := rt.Store.Runs(mainSessionID)
	if err != nil {
		return nil, err
	}
	var found *Run
	for _, r := range runs {
		if r.Manual() && r.ProfileName == profile && r.Open() {
			if found != nil {
				return nil, errors.New("Multiple manual runs need cleanup before this profile can be invoked again.")
			}
			found = r
		}
	}
	return found, nil
}

// checkReusable decides whether an open bound run can take the task. When
// Herdr cannot report its status or its channel is gone, only a confirmed
// closed tab lets the command go on (the run is then marked closed).
// A tab that is not confirmed as this run's pane (ids restart in a fresh
// Herdr server) counts as closed, never as the Sub.
func (rt *Runtime) checkReusable(ctx context.Context, run *Run) (bool, error) {
	own := surface.TabUncertain
	s, serr := rt.surfaceOf(run)
	if serr == nil && run.handle().TabID != "" {
		own, _ = s.Owned(ctx, run.handle(), run.RunID)
	}
	if !channelExists(run) {
		if own != surface.TabGone {
			return false, errors.New("The existing Sub channel is missing and its tab is not confirmed closed; refusing to open the session twice.")
		}
		return false, rt.markClosed(run)
	}
	if run.Launching() {
		return false, errors.New("Cannot verify the existing Sub is available. Close its tab before retrying; no duplicate session was created.")
	}
	if own == surface.TabPresent {
		if !s.AgentAware() {
			return true, nil // the window is this run's, and its channel is there
		}
		if st, _ := s.Status(ctx, run.handle()); st != surface.StatusUnknown && st != "" {
			return true, nil
		}
	}
	if own != surface.TabGone {
		return false, errors.New("Cannot verify the existing Sub is available. Close its tab before retrying; no duplicate session was created.")
	}
	return false, rt.markClosed(run)
}

// markClosed records a run whose tab Herdr confirmed gone.
func (rt *Runtime) markClosed(run *Run) error {
	run.ClosedAt = rt.now().UnixMilli()
	run.UpdatedAt = run.ClosedAt
	if ch, err := openChannel(run); err == nil {
		if s, ok, err := ch.Session(); err == nil && ok {
			run.SubSessionID, run.SubSessionFile = s.SessionID, s.SessionFile
		}
		ch.MarkClosed("The Sub tab was closed.")
		ch.Close()
	}
	return rt.Store.SaveRun(run)
}

func (rt *Runtime) queueInvocation(run *Run, profile, task string) (Delegation, error) {
	ch, err := openChannel(run)
	if err != nil {
		return Delegation{}, err
	}
	defer ch.Close()
	msg, err := ch.Send(channel.ToSub, launch.ManualTask(profile, task))
	if err != nil {
		return Delegation{}, fmt.Errorf("queue task for Sub %s: %w", run.Title, err)
	}
	d := delegation(run)
	d.Action = "queued"
	d.MessageID = msg.ID
	return d, nil
}

// InvocationText is the notification shown after a profile command:
// "<created|resumed|queued>: <name> · <run8>[ · session <id>]", then the
// launch's notes, one a line, since the user sees nothing else of them.
func InvocationText(d Delegation) string {
	s := fmt.Sprintf("%s: %s · %s", d.Action, d.Profile, short(d.RunID))
	if d.SessionID != "" {
		s += " · session " + d.SessionID
	}
	for _, n := range d.Notes {
		s += "\n" + termesc.Escape(n)
	}
	return s
}

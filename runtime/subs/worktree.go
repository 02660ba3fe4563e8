package subs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/worktree"
)

// DefaultWorktreeDir is where Subs' worktrees are made when no directory
// is given: <agentDir>/facets/worktrees, outside every checkout.
func DefaultWorktreeDir(agentDir string) string {
	return filepath.Join(agentDir, "facets", "worktrees")
}

// WorktreeInfo is a Sub's worktree as delegate and close report it.
type WorktreeInfo struct {
	Branch string `json:"branch"`
	Path   string `json:"path"`
	Base   string `json:"base"`
	// State is what the worktree held at close (close and list only).
	State *worktree.State `json:"state,omitempty"`
	// Removed is true when close removed an empty worktree with its branch.
	Removed bool `json:"removed,omitempty"`
	// Summary is the worktree in one line.
	Summary string `json:"summary,omitempty"`
}

func worktreeInfo(w *worktree.Worktree) *WorktreeInfo {
	if w == nil {
		return nil
	}
	return &WorktreeInfo{Branch: w.Branch, Path: w.Path, Base: w.Base}
}

// keepsWorktree reports whether a closed run's worktree is still on disk
// for the Main to review, so its record must stay.
func (r *Run) keepsWorktree() bool { return r.Worktree != nil && !r.WorktreeRemoved }

// plannedWorktree is the worktree a new Sub of p will get, found before a
// slot is taken so that a directory that cannot have one fails first.
type plannedWorktree struct {
	repo worktree.Repo
	// dirty counts the Main's uncommitted changes the worktree will lack.
	dirty int
}

// planWorktree finds the repository of cwd for a worktree profile; nil for
// a shared profile.
func (rt *Runtime) planWorktree(ctx context.Context, p manifest.Profile, cwd string) (*plannedWorktree, error) {
	if p.Launch.Workspace != manifest.WorkspaceWorktree {
		return nil, nil
	}
	repo, err := rt.Git.Find(ctx, cwd)
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepository) {
			return nil, fmt.Errorf("Profile '%s' works in a git worktree (\"workspace\": \"worktree\"), but %s is not in a git work tree; start the Main in a git repository, or set \"workspace\": \"shared\".", p.Name, cwd)
		}
		return nil, fmt.Errorf("Profile '%s' works in a git worktree, but: %w", p.Name, err)
	}
	dirty, err := rt.Git.Dirty(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("Profile '%s': %w", p.Name, err)
	}
	return &plannedWorktree{repo: repo, dirty: dirty}, nil
}

// worktreePath is where a worktree goes: <WorktreeDir>/<repo>-<id>.
func (rt *Runtime) worktreePath(repo worktree.Repo, id string) string {
	return filepath.Join(rt.WorktreeDir, channel.Safe(filepath.Base(repo.Top))+"-"+id)
}

// makeWorktree creates run's worktree and copies the included ignored
// files into it; it returns the Sub's working directory there (the Main's
// place in the repository) and notes for the delegate result.
func (rt *Runtime) makeWorktree(ctx context.Context, plan *plannedWorktree, run *Run) (string, []string, error) {
	if rt.WorktreeDir == "" {
		return "", nil, errors.New("delegate: no worktree directory configured")
	}
	branch := chooseBranch(run.ProfileName, run.RunID, func(b string) bool { return rt.Git.BranchExists(ctx, plan.repo, b) })
	path := rt.worktreePath(plan.repo, short(run.RunID))
	if _, err := os.Lstat(path); err == nil {
		path = rt.worktreePath(plan.repo, run.RunID) // as with the branch: the full id is unique
	}
	w, err := rt.Git.Create(ctx, plan.repo, path, branch)
	if err != nil {
		return "", nil, fmt.Errorf("delegate: %w", err)
	}
	run.Worktree = &w
	var notes []string
	if plan.dirty > 0 {
		notes = append(notes, fmt.Sprintf("The worktree starts at the commit %s of %s: %d uncommitted change(s) in the Main's checkout are not in it.", worktree.ShortCommit(w.Base), headName(plan.repo), plan.dirty))
	}
	copied, err := rt.Git.CopyIncluded(ctx, plan.repo, w.Path)
	if err != nil {
		notes = append(notes, "No ignored files were copied: "+err.Error())
	}
	if len(copied.Files) > 0 {
		notes = append(notes, fmt.Sprintf("Copied %d ignored file(s) listed in %s.", len(copied.Files), worktree.IncludeFile))
	}
	for _, s := range copied.Skipped {
		notes = append(notes, "Not copied: "+s)
	}
	if err := rt.Git.InitSubmodules(ctx, w.Path); err != nil {
		notes = append(notes, err.Error())
	}
	cwd := filepath.Join(w.Path, plan.repo.Prefix)
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		// The Main's directory is not in the commit (untracked, or new):
		// the Sub must not start anywhere but in its worktree.
		notes = append(notes, fmt.Sprintf("The Main's directory %s is not in that commit: the Sub starts at the worktree's top.", plan.repo.Prefix))
		cwd = w.Path
	}
	return cwd, notes, nil
}

// chooseBranch is facets/<profile>/<run8>, or with the full run id when a
// branch of the short name exists already (8 hex digits can collide; a
// user may have made it).
func chooseBranch(profile, runID string, exists func(string) bool) string {
	if b := worktree.BranchName(profile, short(runID)); !exists(b) {
		return b
	}
	return worktree.BranchName(profile, runID)
}

func headName(r worktree.Repo) string {
	if r.Branch == "" {
		return "a detached HEAD"
	}
	return "branch " + r.Branch
}

// settleWorktree looks at a closed run's worktree: an empty one is removed
// with its branch; one with work is kept and described. A git failure
// keeps the worktree and says why.
func (rt *Runtime) settleWorktree(ctx context.Context, run *Run) *WorktreeInfo {
	if !run.keepsWorktree() {
		return nil
	}
	w := *run.Worktree
	info := worktreeInfo(&w)
	s, err := rt.Git.Inspect(ctx, w)
	if err != nil {
		info.Summary = fmt.Sprintf("branch %s: kept at %s (%v)", w.Branch, w.Path, err)
		return info
	}
	info.State = &s
	if s.Gone() {
		// Nothing is left to keep (removed by another process, or by hand).
		run.WorktreeRemoved = true
		info.Removed = true
		info.Summary = s.Summary(w)
		return info
	}
	if s.Empty() {
		if err := rt.Git.Remove(ctx, w, false); err == nil {
			run.WorktreeRemoved = true
			info.Removed = true
			info.Summary = fmt.Sprintf("branch %s had no commits and no changes: its worktree and branch were removed", w.Branch)
			return info
		} else {
			info.Summary = fmt.Sprintf("branch %s: kept at %s (removing the empty worktree failed: %v)", w.Branch, w.Path, err)
			return info
		}
	}
	info.Summary = s.Summary(w)
	return info
}

// reopenWorktree gives a resumed persistent Sub the worktree and branch of
// the session it resumes.
func (rt *Runtime) reopenWorktree(ctx context.Context, w *worktree.Worktree, run *Run) error {
	if w == nil {
		return nil
	}
	if err := rt.Git.Reopen(ctx, *w); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	copied := *w
	run.Worktree = &copied
	return nil
}

// KeptWorktree is a closed run whose worktree still holds work.
type KeptWorktree struct {
	RunID         string       `json:"runId"`
	MainSessionID string       `json:"mainSessionId"`
	Title         string       `json:"title"`
	Profile       string       `json:"profile"`
	ClosedAt      int64        `json:"closedAt"`
	Worktree      WorktreeInfo `json:"worktree"`
}

// keptWorktrees lists the closed runs of every Main whose worktrees are
// kept, each with its state read from git.
func (rt *Runtime) keptWorktrees(ctx context.Context, problems *[]string) ([]KeptWorktree, error) {
	mains, err := rt.Store.MainSessions()
	if err != nil {
		return nil, err
	}
	var all []*Run
	for _, m := range mains {
		runs, bad, err := usableRuns(rt.Store.Runs(m))
		*problems = append(*problems, bad...)
		if err != nil {
			return nil, err
		}
		all = append(all, runs...)
	}
	inUse := openWorktrees(all)
	var out []KeptWorktree
	for _, r := range all {
		if r.Open() || !r.keepsWorktree() || inUse[r.Worktree.Path] != nil {
			continue // an open run (a resumed session) is listed with it
		}
		info := worktreeInfo(r.Worktree)
		if s, err := rt.Git.Inspect(ctx, *r.Worktree); err != nil {
			info.Summary = fmt.Sprintf("branch %s at %s: %v", r.Worktree.Branch, r.Worktree.Path, err)
		} else {
			info.State, info.Summary = &s, s.Summary(*r.Worktree)
		}
		out = append(out, KeptWorktree{RunID: r.RunID, MainSessionID: r.MainSessionID, Title: r.Title, Profile: r.ProfileName, ClosedAt: r.ClosedAt, Worktree: *info})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ClosedAt != out[j].ClosedAt {
			return out[i].ClosedAt > out[j].ClosedAt
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}

// Discarded is a kept worktree that Discard removed.
type Discarded struct {
	RunID  string `json:"runId"`
	Branch string `json:"branch"`
	Path   string `json:"path"`
	// Left is the worktree directory left on disk because its repository
	// is gone (forced discard only).
	Left string `json:"left,omitempty"`
}

// Text is the discard result in one line.
func (d Discarded) Text() string {
	if d.Left != "" {
		return fmt.Sprintf("Forgot worktree %s (branch %s): its repository is gone, so the directory is left as it is; remove it with rm -rf once you have what you need.", termesc.Escape(d.Left), termesc.Escape(d.Branch))
	}
	return fmt.Sprintf("Removed worktree %s and branch %s.", termesc.Escape(d.Path), termesc.Escape(d.Branch))
}

// Discard removes the kept worktree and branch of a closed run of any Main,
// found by run id or unique prefix. Without force it refuses uncommitted
// changes and commits no other branch or tag holds, naming them.
func (rt *Runtime) Discard(ctx context.Context, ref string, force bool) (Discarded, error) {
	if ref == "" {
		return Discarded{}, errors.New("discard: give the run id (facets list shows kept worktrees)")
	}
	mains, err := rt.Store.MainSessions()
	if err != nil {
		return Discarded{}, err
	}
	var found []*Run
	for _, m := range mains {
		runs, _, err := usableRuns(rt.Store.Runs(m))
		if err != nil {
			return Discarded{}, err
		}
		for _, r := range runs {
			if r.Worktree != nil && strings.HasPrefix(r.RunID, ref) {
				found = append(found, r)
			}
		}
	}
	switch {
	case len(found) == 0:
		return Discarded{}, fmt.Errorf("No run with a worktree matches '%s'; facets list shows kept worktrees.", ref)
	case len(found) > 1:
		return Discarded{}, fmt.Errorf("'%s' matches %d runs with worktrees; give more of the run id.", ref, len(found))
	}
	run := found[0]
	if run.Open() {
		return Discarded{}, fmt.Errorf("Run %s is open; close it from its Main first (facets close --run %s --discard --main-session %s closes and discards).", short(run.RunID), short(run.RunID), run.MainSessionID)
	}
	if user := rt.worktreeUser(run); user != nil {
		return Discarded{}, fmt.Errorf("Worktree %s is in use by open run %s (a resumed session); close that run first.", run.Worktree.Path, short(user.RunID))
	}
	unlock, err := rt.Store.Lock(run.MainSessionID, "slots")
	if err != nil {
		return Discarded{}, err
	}
	defer unlock()
	w := *run.Worktree
	left := ""
	if !run.WorktreeRemoved {
		if s, err := rt.Git.Inspect(ctx, w); err == nil && s.RepoMissing {
			// git cannot reach the repository any more: it cannot say what
			// the worktree holds, and cannot remove it.
			if !force {
				return Discarded{}, fmt.Errorf("discard run %s: the repository at %s is gone, so git cannot check worktree %s; pass --force to forget it (its directory is left as it is)", short(run.RunID), w.Repo, w.Path)
			}
			left = w.Path
		} else if err := rt.Git.Remove(ctx, w, force); err != nil {
			return Discarded{}, fmt.Errorf("discard run %s: %w", short(run.RunID), err)
		}
		run.WorktreeRemoved = true
	}
	run.UpdatedAt = rt.now().UnixMilli()
	if !channelExists(run) && !run.Persistent() && !run.Manual() {
		err = rt.Store.DeleteRun(run.MainSessionID, run.RunID)
	} else {
		err = rt.Store.SaveRun(run)
	}
	if err != nil {
		return Discarded{}, err
	}
	return Discarded{RunID: run.RunID, Branch: w.Branch, Path: w.Path, Left: left}, nil
}

// worktreeUser is the open run, of any Main, working in run's worktree
// (the run of a resumed session), or nil.
func (rt *Runtime) worktreeUser(run *Run) *Run {
	return rt.worktreesInUse()[run.Worktree.Path]
}

// worktreesInUse maps the worktree of every open run, of any Main, to that
// run: read once by a caller that asks about many runs.
func (rt *Runtime) worktreesInUse() map[string]*Run {
	mains, _ := rt.Store.MainSessions()
	var all []*Run
	for _, m := range mains {
		runs, _, _ := usableRuns(rt.Store.Runs(m))
		all = append(all, runs...)
	}
	return openWorktrees(all)
}

// openWorktrees maps the worktree paths of the open runs among runs to
// their runs.
func openWorktrees(runs []*Run) map[string]*Run {
	used := map[string]*Run{}
	for _, r := range runs {
		if r.Open() && r.Worktree != nil {
			used[r.Worktree.Path] = r
		}
	}
	return used
}

// resumedWorktree is the persistent session a delegate resumes (resumeID
// is its exact id), with the worktree it reopens.
func (rt *Runtime) resumedWorktree(req DelegateRequest, p manifest.Profile, resumeID string) (*Resumable, error) {
	s, err := rt.findResumable(req.MainSessionID, resumeID, req.Manual, p.Name)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// handOverWorktree takes the worktree off the closed run a resumed session
// was read from, once the resume has launched: the new run owns it now, so
// neither list, discard nor gc may treat it as a finished run's.
func (rt *Runtime) handOverWorktree(from *Resumable) {
	unlock, err := rt.Store.Lock(from.runMain, "slots")
	if err != nil {
		return
	}
	defer unlock()
	r, ok, err := rt.Store.LoadRun(from.runMain, from.runID)
	if err != nil || !ok || r.Worktree == nil {
		return
	}
	r.Worktree, r.WorktreeRemoved = nil, false
	r.UpdatedAt = rt.now().UnixMilli()
	rt.Store.SaveRun(r)
}

// rollback releases a launch that failed before its Sub could start: the
// new worktree (fresh), the channel and the run record. A worktree that
// cannot be removed (it holds something after all) keeps the run record,
// closed, so facets list still shows it.
func (rt *Runtime) rollback(ctx context.Context, run *Run, ch *channel.Channel, fresh bool) error {
	if werr := rt.dropWorktree(ctx, run, fresh); werr != nil {
		run.ClosedAt = rt.now().UnixMilli()
		run.UpdatedAt, run.LaunchPID = run.ClosedAt, 0
		return errors.Join(werr, ch.Remove(), rt.Store.SaveRun(run))
	}
	return errors.Join(ch.Remove(), rt.Store.DeleteRun(run.MainSessionID, run.RunID))
}

// dropWorktree removes the new worktree of a launch that failed before the
// Sub could write to it (fresh); a reopened one, and one that holds
// anything, is kept.
func (rt *Runtime) dropWorktree(ctx context.Context, run *Run, fresh bool) error {
	if run.Worktree == nil || !fresh {
		return nil
	}
	if err := rt.Git.Remove(ctx, *run.Worktree, false); err != nil {
		return fmt.Errorf("worktree %s is kept: %w", run.Worktree.Path, err)
	}
	return nil
}

// CloseRequest is a close, optionally followed by the discard of the run's
// kept worktree.
type CloseRequest struct {
	MainSessionID string
	// Ref is a run id or unique prefix.
	Ref    string
	Reason string
	// Discard removes the run's kept worktree and branch after the close;
	// a run already closed (by any Main) is only discarded.
	Discard bool
	// Force discards uncommitted changes and unmerged commits too.
	Force bool
}

// Closed is what CloseRun did.
type Closed struct {
	Closure
	Discarded *Discarded `json:"discarded,omitempty"`
}

// Text is the close result, then the discard's line.
func (c Closed) Text() string {
	var parts []string
	if c.Title != "" {
		parts = append(parts, c.Closure.Text())
	}
	if c.Discarded != nil {
		parts = append(parts, c.Discarded.Text())
	}
	return strings.Join(parts, "\n")
}

// CloseRun closes the Main's open run req.Ref and, with Discard, removes
// its kept worktree; a Ref that names no open run of the Main is, with
// Discard, a closed run whose worktree is removed.
func (rt *Runtime) CloseRun(ctx context.Context, req CloseRequest) (Closed, error) {
	if req.Force && !req.Discard {
		return Closed{}, errors.New("--force goes with --discard: close never removes work by itself")
	}
	if !req.Discard {
		c, err := rt.Close(ctx, req.MainSessionID, req.Ref, req.Reason)
		return Closed{Closure: c}, err
	}
	var out Closed
	if req.MainSessionID != "" {
		if run, err := rt.findOpen(req.MainSessionID, req.Ref); err == nil {
			c, err := rt.Close(ctx, req.MainSessionID, run.RunID, req.Reason)
			if err != nil {
				return Closed{}, err
			}
			out.Closure = c
			if c.Worktree == nil || c.Worktree.Removed {
				return out, nil
			}
		}
	}
	ref := req.Ref
	if out.RunID != "" {
		ref = out.RunID
	}
	d, err := rt.Discard(ctx, ref, req.Force)
	if err != nil {
		if out.RunID != "" {
			return Closed{}, fmt.Errorf("%s; %w", out.Closure.Text(), err)
		}
		return Closed{}, err
	}
	out.Discarded = &d
	return out, nil
}

package lsp

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/profiles"
)

// maxWatches bounds the directories watched, so a tree with thousands of
// profiles cannot exhaust the inotify limit; beyond it, changes outside
// the editor are noticed only in the directories watched so far.
const maxWatches = 2000

// watchLoop re-validates after changes made outside the editor (a git
// checkout, another program writing a profile): fsnotify events in the
// directories discovery reads are collected for one debounce and then
// cause one validation pass. The watched set is recomputed after each
// burst, so a directory created meanwhile is watched from then on.
// Watching a missing directory's nearest existing parent notices its
// creation.
func (s *Server) watchLoop(ctx context.Context, ready <-chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-ready:
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.logf("watch for changes outside the editor: %v", err)
		return
	}
	defer w.Close()
	watched := map[string]bool{}
	s.refreshWatches(w, watched)
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(s.cfg.Debounce)
				fire = timer.C
			}
		case <-s.rewatch:
			s.refreshWatches(w, watched)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			s.logf("watch: %v", err)
		case <-fire:
			timer, fire = nil, nil
			// Watch first, then validate: whatever changed before the
			// new watches were in place is on disk for the pass to read.
			s.refreshWatches(w, watched)
			s.request()
		}
	}
}

// refreshWatches watches every directory discovery reads for the current
// scopes, or the nearest existing parent of one that does not exist yet,
// and stops watching the others.
func (s *Server) refreshWatches(w *fsnotify.Watcher, watched map[string]bool) {
	snap := s.snapshot()
	want := map[string]bool{}
	groups := scopeGroups(snap.opts, snap.docs)
	if len(groups) == 0 {
		groups = []scopeGroup{{opts: snap.opts}}
	}
	for _, g := range groups {
		for _, d := range watchDirs(g.opts) {
			if len(want) >= maxWatches {
				break
			}
			want[existingAncestor(d)] = true
		}
	}
	for d := range watched {
		if !want[d] {
			w.Remove(d)
			delete(watched, d)
		}
	}
	for d := range want {
		if !watched[d] {
			if err := w.Add(d); err == nil {
				watched[d] = true
			}
		}
	}
}

// watchDirs lists the directories whose contents a compile with opts
// reads: the agent dir (trust), profile scopes and each profile directory,
// MAIN.md directories, role layers and packs, and named-skill roots.
func watchDirs(opts compiler.Options) []string {
	env := opts.Env
	if env.AgentDir == "" {
		return nil
	}
	dirs := []string{env.AgentDir, filepath.Join(env.AgentDir, "facets"), filepath.Join(env.AgentDir, "agents"),
		filepath.Join(env.AgentDir, "skills")}
	profileDirs := []string{env.GlobalProfilesDir()}
	if env.Home != "" {
		dirs = append(dirs, filepath.Join(env.Home, ".agents", "skills"))
	}
	if env.Cwd != "" {
		dirs = append(dirs, filepath.Join(env.Cwd, ".pi", "agents"))
		for _, d := range profiles.Ancestors(env.Cwd) {
			dirs = append(dirs, filepath.Join(d, ".pi", "facets"), filepath.Join(d, ".pi", "skills"), filepath.Join(d, ".agents", "skills"))
			profileDirs = append(profileDirs, profiles.ProjectProfilesDir(d))
		}
	}
	for _, pd := range profileDirs {
		dirs = append(dirs, pd)
		entries, err := os.ReadDir(pd)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(pd, e.Name()))
			}
		}
	}
	if opts.BundledRoles != "" {
		dirs = append(dirs, opts.BundledRoles)
	}
	for _, p := range opts.RolePacks {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			p = filepath.Dir(p)
		}
		dirs = append(dirs, p)
	}
	return dirs
}

// existingAncestor is dir, or its nearest parent that exists as a
// directory, so that creating dir is noticed.
func existingAncestor(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		if filepath.Dir(d) == d {
			return d
		}
	}
}

package profiles

import (
	"os"
	"path/filepath"
)

// DiscoverProfiles scans the global profiles directory (unless
// env.ProjectOnly) and, when trusted,
// every <dir>/.pi/facets/profiles from the filesystem root down to the
// working directory. The result is in precedence order: later scopes
// override earlier ones.
func DiscoverProfiles(env Env, trusted bool) []ScopeProfiles {
	var out []ScopeProfiles
	for _, l := range ListProfiles(env, trusted) {
		sp := ScopeProfiles{Scope: l.Scope, Dir: l.Dir, Problems: l.Problems, Entries: make([]Entry, l.Len())}
		for i := range sp.Entries {
			sp.Entries[i] = l.Entry(i)
		}
		forEach(len(sp.Entries), func(i int) { ReadEntry(env.Overlay, &sp.Entries[i]) })
		out = append(out, sp)
	}
	return out
}

// ListProfiles is DiscoverProfiles without reading the entries' files:
// a caller that handles one entry at a time reads each with ReadEntry and
// can let go of its contents before reading the next, instead of holding
// every file of the tree at once. Each list builds its entries when asked
// (ProfileList.Entry).
func ListProfiles(env Env, trusted bool) []ProfileList {
	var out []ProfileList
	if !env.ProjectOnly {
		out = append(out, listProfiles(env.GlobalProfilesDir(), Global, env.Overlay))
	}
	if !trusted {
		return out
	}
	for _, dir := range env.ProjectDirs() {
		pd := ProjectProfilesDir(dir)
		if filepath.Clean(pd) == filepath.Clean(env.GlobalProfilesDir()) {
			continue // the agent dir may live inside the project tree
		}
		out = append(out, listProfiles(pd, Project, env.Overlay))
	}
	return out
}

// UntrustedProjectDirs lists the <dir>/.pi/facets directories between the
// root and the working directory, and the working directory's .pi/agents,
// that exist but were not loaded because the project is untrusted, so check
// and Pi can say what they skipped.
func UntrustedProjectDirs(env Env) []string {
	var out []string
	global := filepath.Join(env.AgentDir, "facets")
	for _, dir := range env.ProjectDirs() {
		fd := filepath.Join(dir, ".pi", "facets")
		if filepath.Clean(fd) == filepath.Clean(global) {
			continue
		}
		if fi, err := os.Stat(fd); err == nil && fi.IsDir() {
			out = append(out, fd)
		}
	}
	// Roles come from the working directory's .pi/agents only.
	if ad := filepath.Join(env.Cwd, ".pi", "agents"); filepath.Clean(ad) != filepath.Clean(filepath.Join(env.AgentDir, "agents")) {
		if fi, err := os.Stat(ad); err == nil && fi.IsDir() {
			out = append(out, ad)
		}
	}
	return out
}

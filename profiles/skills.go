package profiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/internal/safefile"
)

// Bounds of the private-skills walk, so a skills/ symlink to / or to a
// huge tree stops quickly with one diagnostic instead of walking the whole
// filesystem.
const (
	MaxSkillDepth   = 8     // directory levels below skills/
	MaxSkillEntries = 10000 // directory entries examined in all
)

// PrivateSkills discovers the skills in <profileDir>/skills: every
// directory holding a SKILL.md (without descending further, so a skill's
// own files are never skills) and every *.md file directly in skills/.
// Hidden entries and node_modules are skipped, and real paths are visited
// once, which also stops symlink loops. Paths are returned depth-first in
// sorted order. The walk never enters /proc, /sys or /dev and stops, with
// one problem, beyond MaxSkillDepth levels or MaxSkillEntries entries.
// real resolves the profile directory's symlinks; nil resolves afresh.
func PrivateSkills(profileDir, subject string, real *RealPaths) ([]string, []diag.Diagnostic) {
	return privateSkills(profileDir, subject, real, MaxSkillDepth, MaxSkillEntries, stat)
}

// privateSkills is PrivateSkills with its bounds and its stat (which a
// test replaces to model a case-insensitive file system) as parameters.
func privateSkills(profileDir, subject string, real *RealPaths, maxDepth, maxEntries int, stat func(string, *syscall.Stat_t) error) ([]string, []diag.Diagnostic) {
	root := filepath.Join(profileDir, "skills")
	var skills []string
	var probs []diag.Diagnostic
	visited := map[fileID]bool{}
	entries, stopped := 0, false
	stop := func(path, msg, hint string) {
		stopped = true
		probs = append(probs, diag.Diagnostic{Severity: diag.Error, File: path, Code: "skills-walk-stopped", Subject: subject, Message: msg, Hint: hint})
	}
	depthOf := func(dir string) int {
		rel, _ := filepath.Rel(root, dir)
		if rel == "." {
			return 0
		}
		return strings.Count(rel, string(filepath.Separator)) + 1
	}
	// visit takes the directory's stat result from its parent's listing, so
	// each directory is stat'ed once. Its device and inode identify it
	// however it was reached, which stops symlink loops without resolving
	// every path component.
	// resolved is dir with symlinks resolved, kept along the walk so that
	// only symlinked entries cost an EvalSymlinks.
	var visit func(dir, resolved string, id fileID, isRoot bool)
	visit = func(dir, resolved string, id fileID, isRoot bool) {
		if stopped {
			return
		}
		if visited[id] {
			return
		}
		visited[id] = true
		if sys := systemDir(resolved); sys != "" {
			stop(dir, fmt.Sprintf("skills walk stopped: %s leads into %s, which is never searched for skills", dir, sys),
				"point the skills symlink at a directory of skills")
			return
		}
		if d := depthOf(dir); d > maxDepth {
			stop(dir, fmt.Sprintf("skills walk stopped: %s is %d levels below skills/, more than the %d allowed", dir, d, maxDepth),
				"flatten the skills directory or list deep skills explicitly in \"skills\"")
			return
		}
		skill := joinName(dir, "SKILL.md")
		isSkill := func() bool {
			var st syscall.Stat_t
			return stat(skill, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG
		}
		// skills/ itself is rarely a skill and is listed anyway, so its
		// listing says whether a SKILL.md may be there; below it, one stat
		// spares listing a skill's own files. The listing only rules out:
		// the stat decides, so on a case-insensitive file system a
		// skill.md makes skills/ a skill, as it does for Pi.
		if !isRoot && isSkill() {
			skills = append(skills, skill)
			return
		}
		des, err := os.ReadDir(dir)
		if isRoot && err == nil && slices.ContainsFunc(des, func(de fs.DirEntry) bool { return strings.EqualFold(de.Name(), "SKILL.md") }) && isSkill() {
			skills = append(skills, skill)
			return
		}
		if err != nil {
			probs = append(probs, diag.Diagnostic{Severity: diag.Error, File: dir, Code: "unreadable-skills", Subject: subject,
				Message: fmt.Sprintf("cannot read skills directory: %v", unwrapPath(err)),
				Hint:    "check the directory's permissions"})
			return
		}
		for _, de := range des { // sorted by name
			if stopped {
				return
			}
			name := de.Name()
			if strings.HasPrefix(name, ".") || name == "node_modules" {
				continue
			}
			if entries++; entries > maxEntries {
				stop(dir, fmt.Sprintf("skills walk stopped after %d entries (the limit) in %s", maxEntries, root),
					"keep skills/ small, or point it away from a large tree")
				return
			}
			p := joinName(dir, name)
			var st syscall.Stat_t
			if err := stat(p, &st); err != nil {
				probs = append(probs, diag.Diagnostic{Severity: diag.Error, File: p, Code: "unreadable-skills", Subject: subject,
					Message: fmt.Sprintf("cannot stat skill entry: %v", unwrapPath(err)),
					Hint:    "remove the broken entry or fix its target"})
				continue
			}
			switch st.Mode & syscall.S_IFMT {
			case syscall.S_IFDIR:
				next := joinName(resolved, name)
				if de.Type()&fs.ModeSymlink != 0 {
					next = resolve(p)
				}
				visit(p, next, idOfStat(&st), false)
			case syscall.S_IFREG:
				if !isRoot || !strings.HasSuffix(name, ".md") {
					continue
				}
				skills = append(skills, p)
			default:
				// A FIFO, device or socket where a skill file would be
				// (a link to /dev/zero included) is never read; say so
				// rather than let the skill vanish from the launch.
				if (isRoot && strings.HasSuffix(name, ".md")) || strings.EqualFold(name, "SKILL.md") {
					probs = append(probs, diag.Diagnostic{Severity: diag.Error, File: p, Code: "unreadable-skills", Subject: subject,
						Message: fmt.Sprintf("skill %s is %s, not a regular file; it is not loaded", p, safefile.Kind(safefile.ModeOf(&st))),
						Hint:    "replace it with a regular Markdown file, or remove it"})
				}
			}
		}
	}
	// Lstat first: only a symlinked skills/ needs its own resolution; a
	// plain one lies in the profile directory, whose ancestors real has
	// usually resolved already for a sibling profile.
	var st syscall.Stat_t
	err := lstat(root, &st)
	var resolved string
	if err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		err = stat(root, &st)
		resolved = resolve(root)
	} else if err == nil {
		if real == nil {
			real = &RealPaths{}
		}
		resolved = filepath.Join(real.Real(profileDir), "skills")
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []diag.Diagnostic{{Severity: diag.Error, File: root, Code: "unreadable-skills", Subject: subject,
			Message: fmt.Sprintf("cannot resolve skills directory: %v", unwrapPath(err)),
			Hint:    "remove the broken symlink or fix its target"}}
	}
	visit(root, resolved, idOfStat(&st), true)
	return skills, probs
}

// RealPaths resolves symlinks in absolute paths and remembers the
// directories above each path it resolved, so that the profiles of one
// scope share the lstat calls of their common ancestors. It is safe for concurrent use;
// the zero value is ready.
type RealPaths struct {
	mu    sync.Mutex
	cache map[string]string
}

// Real returns p with symlinks resolved, or p itself if that fails, as
// filepath.EvalSymlinks would, but costs one lstat per path component not
// seen before. It remembers the directories above p, which sibling
// profiles share, but not p itself: each profile directory is resolved
// once, and remembering all of them would hold a large tree's paths to
// the end.
func (r *RealPaths) Real(p string) string {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		return resolve(p)
	}
	return r.real(p, false)
}

// real is Real of a clean absolute path, remembered when remember is set.
func (r *RealPaths) real(p string, remember bool) string {
	r.mu.Lock()
	got, ok := r.cache[p]
	r.mu.Unlock()
	if ok {
		return got
	}
	if parent := filepath.Dir(p); parent == p {
		got = p
	} else if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		got = resolve(p)
	} else {
		got = filepath.Join(r.real(parent, true), filepath.Base(p))
	}
	if remember {
		r.mu.Lock()
		if r.cache == nil {
			r.cache = map[string]string{}
		}
		r.cache[p] = got
		r.mu.Unlock()
	}
	return got
}

// resolve returns p with symlinks resolved, or p itself if that fails.
func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// systemDir returns the system directory (/proc, /sys, /dev) that the
// resolved path is or lies in, or "". Their files are not skills, and
// reading them can block or never end.
func systemDir(resolved string) string {
	for _, s := range []string{"/proc", "/sys", "/dev"} {
		if resolved == s || strings.HasPrefix(resolved, s+"/") {
			return s
		}
	}
	return ""
}

// IsNamedSkill reports whether a skills entry is a bare skill name rather
// than a path: no separators, no leading dot, not absolute.
func IsNamedSkill(ref string) bool {
	if ref == "~" || strings.HasPrefix(ref, "~/") {
		return false
	}
	return !strings.ContainsAny(ref, `/\`) && !strings.HasPrefix(ref, ".") && !filepath.IsAbs(ref)
}

// ResolveSkill finds a skills entry. A name is looked up in
// <agentDir>/skills, then ~/.agents/skills, then (only when trusted) in
// <dir>/.pi/skills and <dir>/.agents/skills for each ancestor, nearest
// first. A path is resolved against baseDir (the directory holding the
// profile file), regardless of trust. Each candidate matches as a file, a
// directory with SKILL.md, or the same with ".md" appended.
func ResolveSkill(ref, baseDir string, env Env, trusted bool) (string, bool) {
	if !env.ProjectOnly {
		ref = expandHome(ref, env.Home) // a repository judged alone has no home
	}
	var cands []string
	if IsNamedSkill(ref) {
		if !env.ProjectOnly {
			cands = append(cands, filepath.Join(env.AgentDir, "skills", ref), filepath.Join(env.Home, ".agents", "skills", ref))
		}
		if trusted {
			up := env.ProjectDirs()
			for i := len(up) - 1; i >= 0; i-- {
				cands = append(cands, filepath.Join(up[i], ".pi", "skills", ref), filepath.Join(up[i], ".agents", "skills", ref))
			}
		}
	} else if filepath.IsAbs(ref) {
		cands = append(cands, filepath.Clean(ref))
	} else {
		cands = append(cands, filepath.Join(baseDir, ref))
	}
	for _, c := range cands {
		if p, ok := skillAt(c); ok {
			return p, true
		}
		if p, ok := skillAt(c + ".md"); ok {
			return p, true
		}
	}
	return "", false
}

func skillAt(p string) (string, bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", false
	}
	if fi.Mode().IsRegular() {
		return p, true
	}
	if fi.IsDir() {
		s := filepath.Join(p, "SKILL.md")
		if sf, err := os.Stat(s); err == nil && sf.Mode().IsRegular() {
			return s, true
		}
	}
	return "", false
}

func expandHome(ref, home string) string {
	switch {
	case ref == "~":
		return home
	case strings.HasPrefix(ref, "~/"):
		if home == "" {
			return ref
		}
		return filepath.Join(home, ref[2:])
	}
	return ref
}

// DedupeByRealPath removes later paths that name the same file as an
// earlier one (through a symlink or another route), so a skill is passed to
// Pi once. Files are compared by device and inode, which is what realpath
// equality means, at the cost of one stat each.
func DedupeByRealPath(paths []string) []string {
	if len(paths) < 2 {
		return paths // nothing to compare with: spare the stat
	}
	seen := map[fileID]bool{}
	var out []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			if id, ok := idOf(fi); ok {
				if seen[id] {
					continue
				}
				seen[id] = true
			}
		}
		out = append(out, p)
	}
	return out
}

// fileID identifies a file independently of the path used to reach it.
type fileID struct{ dev, ino uint64 }

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return idOfStat(st), true
}

// joinName is filepath.Join(dir, name) for a clean dir and a name from a
// directory listing (no separator, never . or ..), without Join's Clean
// pass, which the walk would otherwise pay for every entry.
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

func idOfStat(st *syscall.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: st.Ino} }

// stat and lstat fill st on the caller's stack, retrying on EINTR as
// os.Stat does; os.Stat would allocate a FileInfo for every entry of the
// walk, thousands in a large setup.
func stat(p string, st *syscall.Stat_t) error {
	return retryEINTR(func() error { return syscall.Stat(p, st) })
}

func lstat(p string, st *syscall.Stat_t) error {
	return retryEINTR(func() error { return syscall.Lstat(p, st) })
}

func retryEINTR(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}

// maxSkillNames bounds how many entries SkillNames reads from each skills
// directory, so a huge directory cannot stall an editor's completion.
const maxSkillNames = 1000

// SkillNames lists the skill names a profile's skills entry can use, as
// ResolveSkill would find them: the skills in <agentDir>/skills,
// ~/.agents/skills and, when trusted, each ancestor's .pi/skills and
// .agents/skills (a directory with SKILL.md, or a file, named without
// ".md"). The result is sorted and without duplicates.
func SkillNames(env Env, trusted bool) []string {
	dirs := []string{filepath.Join(env.AgentDir, "skills")}
	if env.Home != "" {
		dirs = append(dirs, filepath.Join(env.Home, ".agents", "skills"))
	}
	if trusted {
		for _, d := range Ancestors(env.Cwd) {
			dirs = append(dirs, filepath.Join(d, ".pi", "skills"), filepath.Join(d, ".agents", "skills"))
		}
	}
	var names []string
	for _, dir := range dirs {
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		entries, _ := f.ReadDir(maxSkillNames)
		f.Close()
		for _, e := range entries {
			name := strings.TrimSuffix(e.Name(), ".md")
			if name == "" || !IsNamedSkill(name) {
				continue
			}
			if _, ok := skillAt(filepath.Join(dir, e.Name())); ok {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

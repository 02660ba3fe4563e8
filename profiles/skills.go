package profiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// PrivateSkills discovers the skills in <profileDir>/skills: every
// directory holding a SKILL.md (without descending further, so a skill's
// own files are never skills) and every *.md file directly in skills/.
// Hidden entries and node_modules are skipped, and real paths are visited
// once, which also stops symlink loops. Paths are returned depth-first in
// sorted order.
func PrivateSkills(profileDir, subject string) ([]string, []Problem) {
	root := filepath.Join(profileDir, "skills")
	var skills []string
	var probs []Problem
	visited := map[fileID]bool{}
	// visit takes the directory's stat result from its parent's listing, so
	// each directory is stat'ed once. Its device and inode identify it
	// however it was reached, which stops symlink loops without resolving
	// every path component.
	var visit func(dir string, fi os.FileInfo, isRoot bool)
	visit = func(dir string, fi os.FileInfo, isRoot bool) {
		id, ok := idOf(fi)
		if ok && visited[id] {
			return
		}
		visited[id] = true
		if fi, err := os.Stat(filepath.Join(dir, "SKILL.md")); err == nil && fi.Mode().IsRegular() {
			skills = append(skills, filepath.Join(dir, "SKILL.md"))
			return
		}
		des, err := os.ReadDir(dir)
		if err != nil {
			probs = append(probs, Problem{Path: dir, Code: "unreadable-skills", Subject: subject,
				Message: fmt.Sprintf("cannot read skills directory: %v", unwrapPath(err)),
				Hint:    "check the directory's permissions"})
			return
		}
		for _, de := range des { // sorted by name
			name := de.Name()
			if strings.HasPrefix(name, ".") || name == "node_modules" {
				continue
			}
			p := filepath.Join(dir, name)
			fi, err := os.Stat(p)
			if err != nil {
				probs = append(probs, Problem{Path: p, Code: "unreadable-skills", Subject: subject,
					Message: fmt.Sprintf("cannot stat skill entry: %v", unwrapPath(err)),
					Hint:    "remove the broken entry or fix its target"})
				continue
			}
			switch {
			case fi.IsDir():
				visit(p, fi, false)
			case isRoot && fi.Mode().IsRegular() && strings.HasSuffix(name, ".md"):
				skills = append(skills, p)
			}
		}
	}
	fi, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []Problem{{Path: root, Code: "unreadable-skills", Subject: subject,
			Message: fmt.Sprintf("cannot resolve skills directory: %v", unwrapPath(err)),
			Hint:    "remove the broken symlink or fix its target"}}
	}
	visit(root, fi, true)
	return skills, probs
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
	ref = expandHome(ref, env.Home)
	var cands []string
	if IsNamedSkill(ref) {
		cands = append(cands, filepath.Join(env.AgentDir, "skills", ref), filepath.Join(env.Home, ".agents", "skills", ref))
		if trusted {
			up := Ancestors(env.Cwd)
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
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true
}

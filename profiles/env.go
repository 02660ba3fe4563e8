package profiles

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/facets-dev/facets/internal/envvar"
)

// Env locates the directories discovery starts from. Every path is
// absolute and cleaned.
type Env struct {
	AgentDir string // Pi's agent dir: $PI_CODING_AGENT_DIR or ~/.pi/agent
	Home     string // the user's home directory
	Cwd      string // the working directory the Main Pi starts in
	// ProjectOnly judges the repository alone (check --project-only, for
	// CI and pre-commit): only the project scopes from Root down to Cwd are
	// read; nothing of the agent dir or the home directory (global
	// profiles, roles, MAIN.md and skills, trust settings) is.
	ProjectOnly bool
	// Root is the topmost project directory read when ProjectOnly.
	Root string
	// Overlay, when set, holds unsaved contents read instead of the files
	// at those paths (facets lsp); check and compile leave it nil.
	Overlay Overlay
}

// ProjectOnlyEnv is e restricted to the repository that holds e.Cwd (see
// ProjectOnly and RepositoryRoot).
func (e Env) ProjectOnlyEnv() Env {
	e.ProjectOnly, e.Root = true, RepositoryRoot(e.Cwd)
	return e
}

// ProjectDirs are the directories whose .pi scopes apply, outermost first:
// every ancestor of Cwd, or with ProjectOnly those from Root down.
func (e Env) ProjectDirs() []string {
	up := Ancestors(e.Cwd)
	if !e.ProjectOnly {
		return up
	}
	for i, d := range up {
		if d == filepath.Clean(e.Root) {
			return up[i:]
		}
	}
	return up[len(up)-1:]
}

// RepositoryRoot is the nearest directory at or above dir that holds a .git
// entry (a repository's directory, or a worktree's or submodule's file), as
// `git rev-parse --show-toplevel` finds it without running git; dir itself
// when there is none.
func RepositoryRoot(dir string) string {
	if root, ok := FindRepositoryRoot(dir); ok {
		return root
	}
	return filepath.Clean(dir)
}

// FindRepositoryRoot is RepositoryRoot that reports whether a .git was
// found at all.
func FindRepositoryRoot(dir string) (string, bool) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// NewEnv resolves the agent dir with AgentDir (no explicit override) and
// makes a relative cwd absolute.
func NewEnv(getenv func(string) string, home, cwd string) (Env, error) {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return Env{}, fmt.Errorf("resolve working directory %s: %w", cwd, err)
	}
	agent, err := AgentDir("", getenv, home)
	if err != nil {
		return Env{}, err
	}
	if home != "" {
		home = filepath.Clean(home) // Clean("") is ".", which would make ~ the process's cwd
	}
	return Env{AgentDir: agent, Home: home, Cwd: abs}, nil
}

// AgentDir finds Pi's agent dir the way Pi does, after an explicit choice
// (a --agent-dir flag): explicit if set, else getenv("PI_CODING_AGENT_DIR"),
// else <home>/.pi/agent. The result is absolute and clean; a relative value
// is relative to the process's working directory.
func AgentDir(explicit string, getenv func(string) string, home string) (string, error) {
	agent := explicit
	if agent == "" {
		agent = getenv(envvar.AgentDir)
	}
	if agent == "" {
		if home == "" {
			return "", fmt.Errorf("cannot locate Pi's agent dir: neither PI_CODING_AGENT_DIR nor a home directory is set")
		}
		agent = filepath.Join(home, ".pi", "agent")
	}
	abs, err := filepath.Abs(agent)
	if err != nil {
		return "", fmt.Errorf("resolve agent dir: %w", err)
	}
	return abs, nil
}

// Ancestors returns dir and each of its parents, from the filesystem root
// down to dir.
func Ancestors(dir string) []string {
	var up []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		up = append(up, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i, j := 0, len(up)-1; i < j; i, j = i+1, j-1 {
		up[i], up[j] = up[j], up[i]
	}
	return up
}

// GlobalProfilesDir is where global profiles live.
func (e Env) GlobalProfilesDir() string { return filepath.Join(e.AgentDir, "facets", "profiles") }

// ProjectProfilesDir is where a project directory keeps its profiles.
func ProjectProfilesDir(dir string) string { return filepath.Join(dir, ".pi", "facets", "profiles") }

// skipProjects are directories that hold other people's trees or test
// fixtures, not the repository's own configuration.
var skipProjects = map[string]bool{"node_modules": true, "vendor": true, "testdata": true}

// ProjectsBelow lists dir and every directory below it that holds a .pi
// directory, in walk order (dir first): the working directories a
// repository check judges, each as a Main started there would see it. It
// does not descend into hidden directories (.git, .pi itself),
// node_modules, vendor or testdata, and never follows a symbolic link.
func ProjectsBelow(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	out := []string{dir}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable subdirectory holds nothing facets would read
		}
		if !d.IsDir() || p == dir {
			return nil
		}
		name := d.Name()
		if name == ".pi" {
			if parent := filepath.Dir(p); parent != dir {
				out = append(out, parent)
			}
			return filepath.SkipDir
		}
		if strings.HasPrefix(name, ".") || skipProjects[name] {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find projects below %s: %w", dir, err)
	}
	return out, nil
}

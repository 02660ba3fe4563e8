package compiler

import (
	"fmt"
	"os"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/profiles"
)

// Sources says where profiles, roles and MAIN.md come from, as a command
// line says it (check, compile, explain, profiles, the Pi startup plan):
// the rules that turn it into Options live here, not in the commands.
type Sources struct {
	Cwd      string // -C; project scopes are its ancestors
	AgentDir string // --agent-dir; "" is $PI_CODING_AGENT_DIR, else ~/.pi/agent
	// Trust and NoTrust are --trust and --no-trust (at most one is set).
	Trust, NoTrust bool
	// PiTrust is Pi's own answer, from the Pi startup plan's request.
	PiTrust      *bool
	RolePacks    []string // --role-pack, after $FACETS_ROLE_PACKS
	BundledRoles string   // --bundled-roles; "" is $FACETS_BUNDLED_ROLES
	// ProjectOnly judges the repository alone, trusted (check --project-only).
	ProjectOnly bool
}

// SourceError is a directory of Sources that is not one; its message
// names the flag, as the user typed it.
type SourceError struct {
	Flag, Dir string
}

func (e *SourceError) Error() string { return fmt.Sprintf("%s %s is not a directory", e.Flag, e.Dir) }

// Options turns s into compiler options with the environment getenv and
// the home directory home.
func (s Sources) Options(getenv func(string) string, home string) (Options, error) {
	if s.AgentDir != "" {
		dir, outer := s.AgentDir, getenv
		getenv = func(k string) string {
			if k == envvar.AgentDir {
				return dir
			}
			return outer(k)
		}
	}
	env, err := profiles.NewEnv(getenv, home, s.Cwd)
	if err != nil {
		return Options{}, err
	}
	if !isDir(env.Cwd) {
		return Options{}, &SourceError{Flag: "--cwd", Dir: s.Cwd}
	}
	if s.AgentDir != "" && !isDir(s.AgentDir) {
		return Options{}, &SourceError{Flag: "--agent-dir", Dir: s.AgentDir}
	}
	opts := Options{Env: env, BundledRoles: s.BundledRoles, PiTrust: s.PiTrust}
	if opts.BundledRoles == "" {
		opts.BundledRoles = getenv(envvar.BundledRoles)
	}
	switch {
	case s.ProjectOnly:
		// The repository's own files are what is judged: trusted.
		opts.Env = env.ProjectOnlyEnv()
		t := true
		opts.TrustFlag = &t
	case s.Trust:
		t := true
		opts.TrustFlag = &t
	case s.NoTrust:
		t := false
		opts.TrustFlag = &t
	}
	opts.RolePacks = append(SplitRolePacks(getenv(envvar.RolePacks)), s.RolePacks...)
	return opts, nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

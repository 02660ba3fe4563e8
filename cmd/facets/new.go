package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/profiles"
)

// scopeFlags choose where new files go: the agent dir (--global, the
// default) or the working directory's .pi (--project).
type scopeFlags struct {
	global, project bool
	cwd, agentDir   string
}

func (f *scopeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.global, "global", false, "write into Pi's agent dir (the default)")
	fl.BoolVar(&f.project, "project", false, "write into <cwd>/.pi (the project; Pi loads it only when trusted)")
	fl.StringVarP(&f.cwd, "cwd", "C", ".", "project directory for --project")
	fl.StringVar(&f.agentDir, "agent-dir", "", "Pi agent dir (default $PI_CODING_AGENT_DIR or ~/.pi/agent)")
	cmd.MarkFlagsMutuallyExclusive("global", "project")
}

func (f *scopeFlags) where(a *app) (profiles.Target, error) {
	if f.project {
		if err := requireDir("--cwd", f.cwd); err != nil {
			return profiles.Target{}, err
		}
		dir, err := filepath.Abs(f.cwd)
		if err != nil {
			return profiles.Target{}, err
		}
		return profiles.ProjectTarget(dir), nil
	}
	if err := requireDir("--agent-dir", f.agentDir); err != nil {
		return profiles.Target{}, err
	}
	dir, err := profiles.AgentDir(f.agentDir, a.getenv, a.home())
	if err != nil {
		return profiles.Target{}, usageError{err}
	}
	return profiles.GlobalTarget(dir), nil
}

// requireDir is the one rule for a directory named on the command line
// (--cwd, --agent-dir), in every command: when given, it must exist, so a
// typo is a usage error instead of an empty check or a new directory tree.
// The defaults ($PI_CODING_AGENT_DIR, ~/.pi/agent) may be missing: check
// reports no profiles there, and new creates them.
func requireDir(flag, dir string) error {
	if dir == "" {
		return nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usageError{fmt.Errorf("%s %s is not a directory", flag, dir)}
	}
	return nil
}

// profileSchema is the profile JSON Schema that schema --install writes.
func profileSchema() ([]byte, error) {
	schema, err := cue.Load()
	if err != nil {
		return nil, err
	}
	b, err := schema.JSONSchema(cue.Profile)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// nameError makes an invalid NAME argument a usage error.
func nameError(err error) error {
	if errors.Is(err, profiles.ErrInvalidName) {
		return usageError{err}
	}
	return err
}

func newNewCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "new profile|role NAME",
		Short: "Create a new profile or role file that passes facets check",
	}
	var sf scopeFlags
	var legacy bool
	profile := &cobra.Command{
		Use:   "profile NAME",
		Short: "Create a directory profile (config.json, instructions.md, skills/)",
		Long: `new profile writes <facets>/profiles/NAME/config.json (with "$schema" pointing at
<facets>/profile.schema.json), an instructions.md stub and an empty skills/
directory. With --legacy it writes <facets>/profiles/NAME.json instead.
<facets> is <agentDir>/facets, or <cwd>/.pi/facets with --project. When
<facets>/profile.schema.json is missing it is installed too (as facets
schema --install does). It prints every path it created and never
overwrites anything.`,
		Example: `  facets new profile reviewer
  facets new profile reviewer --project -C ~/src/app
  facets new profile quick --legacy`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := sf.where(a)
			if err != nil {
				return err
			}
			paths, err := profiles.NewProfile(w, args[0], legacy)
			if err != nil {
				return nameError(err)
			}
			// "$schema" points at the installed schema: without it an
			// editor would report a missing file instead of validating.
			schema, err := profiles.EnsureSchema(w, profileSchema)
			if err != nil {
				return err
			}
			if schema != "" {
				paths = append(paths, schema)
			}
			for _, p := range paths {
				fmt.Fprintln(a.stdout, termesc.Escape(p))
			}
			return nil
		},
	}
	sf.register(profile)
	profile.Flags().BoolVar(&legacy, "legacy", false, "write a single-file legacy profile <name>.json")

	var rf scopeFlags
	role := &cobra.Command{
		Use:   "role NAME",
		Short: "Create a role file in the pi-herdr-agents format",
		Long: `new role writes <agentDir>/agents/NAME.md, or <cwd>/.pi/agents/NAME.md with
--project: frontmatter (name, description, tools, spawning, auto-exit,
system-prompt) and a role prompt stub. It never overwrites anything.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := rf.where(a)
			if err != nil {
				return err
			}
			p, err := profiles.NewRole(w, args[0])
			if err != nil {
				return nameError(err)
			}
			_, err = fmt.Fprintln(a.stdout, termesc.Escape(p))
			return err
		},
	}
	rf.register(role)
	cmd.AddCommand(profile, role)
	return cmd
}

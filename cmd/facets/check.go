package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/profiles"
)

func newCheckCmd(a *app) *cobra.Command {
	src := sourceFlags{noDigests: true, diagnosticsOnly: true}
	var rep reportFlags
	cmd := &cobra.Command{
		Use:   "check [PROFILE...]",
		Short: "Validate profiles, roles and MAIN.md files; print diagnostics",
		Long: `check discovers everything a Main Pi started in --cwd would load, validates
it against the embedded CUE schema and prints every diagnostic. It is silent
when there is nothing to report. With profile names, only those profiles and
their diagnostics are checked. With --project-only it judges the
repository alone (for CI and pre-commit): the developer's agent dir, home,
role packs and bundled roles are not read, and the project is trusted.

Exit status: 0 clean, 1 error diagnostics (or warnings with --strict),
2 usage (flags, arguments, a missing --cwd or --agent-dir),
3 I/O failure.`,
		Example: `  facets check
  facets check --project-only --strict --format github
  facets check -C project/service --agent-dir ~/.pi/agent reviewer`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkNames(args); err != nil {
				return err
			}
			_, failed, err := rep.compile(&src, args, a.stdout, rep.format == compiler.FormatJSON)
			if err != nil {
				return err
			}
			return diagnosed(failed)
		},
	}
	src.register(a, cmd)
	src.registerProjectOnly(cmd)
	rep.register(cmd)
	cmd.ValidArgsFunction = src.completeNames(nil)
	return cmd
}

// checkNames refuses an argument that cannot be a profile name, such as
// a path to a config.json, saying what the arguments are and how to check
// the file: by checking the project that holds it.
func checkNames(args []string) error {
	for _, arg := range args {
		if profiles.ValidName(arg) {
			continue
		}
		how := "run facets check -C <the directory holding its .pi> to check a project's files"
		if i := strings.LastIndex(arg, string(filepath.Separator)+".pi"+string(filepath.Separator)); i >= 0 {
			how = "to check that file, check its project: facets check -C " + arg[:i]
		} else if strings.HasPrefix(arg, ".pi"+string(filepath.Separator)) {
			how = "to check that file, check its project: facets check (in the directory holding .pi)"
		}
		return usageError{fmt.Errorf("%q is not a profile name: check's arguments are profile names (the \"name\" in config.json), and it checks every file it discovers; %s", arg, how)}
	}
	return nil
}

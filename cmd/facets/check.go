package main

import (
	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
)

func newCheckCmd(a *app) *cobra.Command {
	src := sourceFlags{noDigests: true}
	var rep reportFlags
	cmd := &cobra.Command{
		Use:   "check [PROFILE...]",
		Short: "Validate profiles, roles and MAIN.md files; print diagnostics",
		Long: `check discovers everything a Main Pi started in --cwd would load, validates
it against the embedded CUE schema and prints every diagnostic. It is silent
when there is nothing to report. With profile names, only those profiles and
their diagnostics are checked.

Exit status: 0 clean, 1 error diagnostics (or warnings with --strict),
2 usage or I/O failure.`,
		Example: `  facets check
  facets check --format github --strict
  facets check -C project/service --agent-dir ~/.pi/agent reviewer`,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, failed, err := rep.compile(&src, args, a.stdout, rep.format == compiler.FormatJSON)
			if err != nil {
				return err
			}
			return diagnosed(failed)
		},
	}
	src.register(a, cmd)
	rep.register(cmd)
	return cmd
}

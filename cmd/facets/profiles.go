package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/internal/termesc"
)

func newProfilesCmd(a *app) *cobra.Command {
	var src sourceFlags
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List effective profiles with scope and invocation mode",
		Long: `profiles lists every effective profile as "name (scope, invocation) — description",
sorted by name, followed by any diagnostics, like Pi's /profiles command.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, ds, opts, err := src.compile(nil)
			if err != nil {
				return err
			}
			if len(m.Profiles) == 0 {
				fmt.Fprintln(a.stdout, "No Facets profiles configured.")
			}
			for _, p := range m.Profiles {
				fmt.Fprintln(a.stdout, termesc.Escape(p.Summary()))
			}
			if len(ds) > 0 {
				fmt.Fprintln(a.stdout)
				if err := compiler.WriteDiagnostics(a.stdout, compiler.FormatText, opts.Env.Cwd, ds); err != nil {
					return err
				}
			}
			return diagnosed(compiler.HasErrors(ds))
		},
	}
	src.register(a, cmd)
	return cmd
}

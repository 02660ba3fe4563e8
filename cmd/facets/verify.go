package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/envvar"
)

func newVerifyCmd(a *app) *cobra.Command {
	var rep reportFlags
	var rolePacks []string
	var bundledRoles string
	cmd := &cobra.Command{
		Use:   "verify MANIFEST",
		Short: "Check that a frozen manifest still matches its sources",
		Long: `verify compiles the sources again in the manifest's own working directory
and agent dir and compares the result with the frozen manifest: the sha256 of
every source, files added to or removed from the scopes it covers, the trust
decision, and the manifest format version. Every difference is one error
diagnostic naming the file; nothing is printed when the snapshot is current.
A snapshot compiled with --trust or --no-trust is checked under the same flag.

Role packs and bundled roles are not recorded in a manifest: pass the same
--role-pack and --bundled-roles (or environment) as the compile.

Exit status: 0 current, 1 stale, 2 usage, 3 a missing, unreadable or
malformed manifest.`,
		Example: `  facets compile --out facets.manifest.json && facets verify facets.manifest.json
  facets verify --format github facets.manifest.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				// cobra's "accepts 1 arg(s)" does not say which argument.
				return fmt.Errorf("accepts 1 arg (MANIFEST, the frozen manifest facets compile --out wrote, e.g. facets verify facets.manifest.json), received %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rep.validate(); err != nil {
				return err
			}
			rep.getenv = a.getenv
			home, _ := os.UserHomeDir()
			opts := compiler.Options{BundledRoles: bundledRoles}
			opts.Env.Home = home
			if opts.BundledRoles == "" {
				opts.BundledRoles = a.getenv(envvar.BundledRoles)
			}
			opts.RolePacks = append(compiler.SplitRolePacks(a.getenv(envvar.RolePacks)), rolePacks...)
			schema, err := cue.Load()
			if err != nil {
				return err
			}
			ds, err := compiler.VerifyFile(schema, args[0], opts)
			if err != nil {
				return err
			}
			base, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			if _, err := rep.report(a.stdout, base, ds, rep.format == compiler.FormatJSON); err != nil {
				return err
			}
			return diagnosed(len(ds) > 0)
		},
	}
	cmd.Flags().StringVar(&rep.format, "format", compiler.FormatText, "diagnostic format: text, json or github")
	completeValues(cmd, "format", compiler.FormatText, compiler.FormatJSON, compiler.FormatGitHub)
	cmd.Flags().StringArrayVar(&rolePacks, "role-pack", nil, "absolute path of a role pack the manifest was compiled with; repeatable; adds to $"+envvar.RolePacks)
	cmd.Flags().StringVar(&bundledRoles, "bundled-roles", "", "bundled roles directory the manifest was compiled with (default $"+envvar.BundledRoles+")")
	return cmd
}

package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/launch"
	"github.com/facets-dev/facets/runtime/pibridge"
)

func newExplainCmd(a *app) *cobra.Command {
	var src sourceFlags
	var format, bridge string
	var role bool
	cmd := &cobra.Command{
		Use:   "explain [--role] NAME",
		Short: "Show how a profile (or role) was resolved and how its Sub would launch",
		Long: `explain shows how a Main started in --cwd resolves one profile: every scope
that defines it, nearest first, which one won and why, what it masks (and an
invalid definition hiding a broader one), the trust decision and its
reason, where each skill came from (private, by name or by path) and its
resolved path, where the instructions came from and their sha256, the
invocation mode, and the exact pi argv of a Sub of it (the argv delegate
builds). With --role it explains a role across the bundled, package, global
and project layers. --format json prints the same as one object.

Exit status: 0 the name resolved, 1 it is unknown (near matches are listed)
or has no usable definition, 2 usage, 3 I/O failure.`,
		Example: `  facets explain reviewer
  facets explain --format json -C project/service --trust writer
  facets explain --role scout`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != compiler.FormatText && format != compiler.FormatJSON {
				return usageError{fmt.Errorf("unknown --format %q (want text or json)", format)}
			}
			opts, err := src.options()
			if err != nil {
				return err
			}
			schema, err := cue.Load()
			if err != nil {
				return err
			}
			var r *compiler.Explanation
			if role {
				r, err = compiler.ExplainRole(schema, opts, args[0])
			} else {
				if bridge == "" {
					bridge = filepath.Join(pibridge.DefaultDir(opts.Env.AgentDir), pibridge.ExtensionFile)
				}
				r, err = compiler.ExplainProfile(schema, opts, args[0], launch.SubArgv(bridge, launch.HerdrAgentState(opts.Env.AgentDir)))
			}
			if err != nil {
				return err
			}
			if err := r.Write(a.stdout, format); err != nil {
				return err
			}
			return diagnosed(r.Profile == nil && r.Role == nil)
		},
	}
	src.register(a, cmd)
	cmd.Flags().BoolVar(&role, "role", false, "explain a role instead of a profile")
	cmd.Flags().StringVar(&format, "format", compiler.FormatText, "output format: text or json")
	completeValues(cmd, "format", compiler.FormatText, compiler.FormatJSON)
	cmd.ValidArgsFunction = src.completeNames(func() bool { return role })
	cmd.Flags().StringVar(&bridge, "bridge", a.getenv(envvar.PiBridge), "the Facets Pi extension a Sub loads (default $"+envvar.PiBridge+", else <agentDir>/extensions/facets/index.js)")
	return cmd
}

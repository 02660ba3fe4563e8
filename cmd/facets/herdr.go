package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/herdr"
	"github.com/facets-dev/facets/internal/envvar"
)

func newHerdrVisibilityCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "herdr-visibility hide|show|toggle|startup",
		Short: "Hide or show Facets Subs in Herdr's Agents panel",
		Long: `herdr-visibility is run by the companion Herdr plugin (herdr/plugin). It
reads HERDR_SOCKET_PATH, HERDR_PLUGIN_STATE_DIR and HERDR_PLUGIN_ID, which
Herdr sets for plugin commands. Subs are hidden until the user shows them;
startup re-applies the saved choice after a Herdr restart.

Exit status: 0 ok, 2 usage, 3 failure (outside a Herdr plugin action, or
Herdr refusing the view).`,
		ValidArgs: []string{"hide", "show", "toggle", "startup"},
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs)(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			v := herdr.Visibility{
				SocketPath: a.getenv(envvar.HerdrSocketPath),
				StateDir:   a.getenv(envvar.HerdrPluginStateDir),
				PluginID:   a.getenv(envvar.HerdrPluginID),
			}
			hidden, err := v.Apply(cmd.Context(), herdr.VisibilityAction(args[0]))
			if err != nil {
				return err
			}
			if hidden {
				fmt.Fprintln(a.stdout, "Facets Subs hidden in the Agents panel")
			} else {
				fmt.Fprintln(a.stdout, "Facets Subs shown in the Agents panel")
			}
			return nil
		},
	}
}

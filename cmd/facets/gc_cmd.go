package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/internal/termesc"
)

func newGCCmd(a *app) *cobra.Command {
	var rf runFlags
	var apply bool
	cmd := &cobra.Command{
		Use:   "gc [--apply]",
		Short: "List what crashed Subs and Mains left behind; --apply releases it",
		Long: `gc looks at every Main of this user in the state dir and the channel
root and lists each leftover with the reason it is one and what --apply
does: an open run whose Sub process ended (sub-exited), whose tab or window
its surface says is gone while no Sub process holds its channel
(surface-gone) or whose channel is gone, as after a reboot (no-channel); a
channel no run record names (orphan-channel); a profile binding to a run
that no longer exists (stale-binding); what only a Main that exited and
can never be resumed (pi --no-session) could use: its closed runs'
channels, user-invoked sessions and bindings (main-gone). What the surface or the files give
no usable answer about is listed as uncertain and never released.

Without --apply nothing changes. --apply releases each leftover under its
Main's slot lock: unreceived messages, rejected and corrupt files and a
persistent Sub's session reference go to <state>/archive/<main>/<run>/
first (facets channel inspect --dir reads it); live runs, channels a writer
holds and other users' files are left alone. It exits 1 when a leftover
could not be released.

--format json prints {"ok","text","applied","leftovers":[{"kind",
"mainSession","runId"?,"profile"?,"path","reason","action","archive"?,
"released"?,"error"?}]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rt, err := rf.runtime("")
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			c, err := rt.GC(ctx, apply)
			if err != nil {
				return rf.failure(a, err)
			}
			if err := rf.result(a, c.Text(), c); err != nil {
				return err
			}
			if err := c.Failed(); err != nil {
				fmt.Fprintf(a.stderr, "facets: %s\n", termesc.Escape(err.Error()))
				return errDiagnostics
			}
			return nil
		},
	}
	rf.register(a, cmd)
	cmd.Flags().BoolVar(&apply, "apply", false, "release the leftovers (default: only list them)")
	return cmd
}

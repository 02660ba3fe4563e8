package main

import (
	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/internal/safefile"
)

func newCompileCmd(a *app) *cobra.Command {
	var src sourceFlags
	var rep reportFlags
	var out string
	cmd := &cobra.Command{
		Use:   "compile [PROFILE...]",
		Short: "Compile the catalog into a frozen launch-snapshot manifest",
		Long: `compile resolves scopes, trust, overrides and skills into one deterministic
JSON manifest: every effective profile with its launch snapshot, the role
catalog, the MAIN.md sections and the sha256 of every source. Compiling the
same inputs twice gives byte-identical output.

Diagnostics go to stderr. Invalid profiles are left out of the manifest and
make the exit status 1; the manifest of the valid ones is still written.
With profile names, the manifest holds only those profiles, and an invalid
or unknown name reports its own diagnostic and writes nothing.`,
		Example: `  facets compile --out ~/.pi/agent/facets/manifest.json
  facets compile reviewer`,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, failed, err := rep.compile(&src, args, a.stderr, false)
			if err != nil {
				return err
			}
			if len(args) > 0 && failed {
				return errDiagnostics
			}
			// The manifest is not re-validated here: that doubled the cost of
			// a compile, and the compiler tests check every fixture's and the
			// example's manifest against #Manifest. Readers of a frozen
			// manifest validate it (compiler.ReadManifest).
			b, err := m.Encode()
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				if _, err := a.stdout.Write(b); err != nil {
					return err
				}
			} else if err := safefile.WriteNamed(out, b, 0o644); err != nil {
				return err
			}
			return diagnosed(failed)
		},
	}
	src.register(a, cmd)
	rep.register(cmd)
	cmd.ValidArgsFunction = src.completeNames(nil)
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the manifest to this file atomically (default stdout); inside a Git work tree no symlink is followed")
	return cmd
}

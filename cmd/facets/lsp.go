package main

import (
	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/internal/lsp"
)

func newLSPCmd(a *app) *cobra.Command {
	var src sourceFlags
	cmd := &cobra.Command{
		Use:   "lsp",
		Short: "Run a Language Server Protocol server on stdin/stdout for editors",
		Long: `lsp speaks the Language Server Protocol on stdin and stdout. An editor starts
it and gets, for every open config.json, legacy profile, role file and MAIN.md,
exactly the diagnostics facets check reports for that file (from the unsaved
buffer, in the file's real scope), plus completion and hover from the schema.

The scope is a Main Pi started in the editor's workspace folder, or in --cwd
when it is given; the other source flags are check's. A file of a Git
repository whose project is not trusted gets what check --project-only
(CI's check) reports for it, and one line saying Pi will not load it until
the project is trusted.`,
		Example: `  facets lsp
  facets lsp --agent-dir ~/.pi/agent --trust`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cwdSet := cmd.Flags().Changed("cwd")
			return lsp.Serve(cmd.Context(), a.stdin, a.stdout, lsp.Config{
				Options: func(root string) (compiler.Options, error) {
					f := src
					if root != "" && !cwdSet {
						f.cwd = root
					}
					return f.options()
				},
				Repository: func(root string) (compiler.Options, error) {
					return compiler.Sources{Cwd: root, ProjectOnly: true}.Options(a.getenv, a.home())
				},
				Log: a.stderr,
			})
		},
	}
	src.register(a, cmd)
	return cmd
}

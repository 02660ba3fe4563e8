package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/profiles"
)

func newSchemaCmd(a *app) *cobra.Command {
	var asCUE, install bool
	var def string
	var sf scopeFlags
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema (or the CUE schema) for editors",
		Long: `schema prints a JSON Schema (draft 2020-12) generated from the embedded CUE
schema. Save it and point "$schema" in config.json at it to get editor
validation. --cue prints the CUE source instead.`,
		Example: `  facets schema --install
  facets schema --install --project
  facets schema --def role
  facets schema --cue`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !install && (sf.global || sf.project) {
				return usageError{fmt.Errorf("--global and --project choose where --install writes; add --install")}
			}
			if install && def != "profile" {
				return usageError{fmt.Errorf("--install writes the profile schema; drop --def %s", def)}
			}
			if install {
				w, err := sf.where(a)
				if err != nil {
					return err
				}
				b, err := profileSchema()
				if err != nil {
					return err
				}
				p, err := profiles.InstallSchema(w, b)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(a.stdout, termesc.Escape(p))
				return err
			}
			if asCUE {
				b, err := cue.Source()
				if err != nil {
					return err
				}
				_, err = a.stdout.Write(b)
				return err
			}
			d, ok := map[string]cue.Definition{"profile": cue.Profile, "role": cue.Role, "manifest": cue.Manifest}[def]
			if !ok {
				return usageError{fmt.Errorf("unknown --def %q (want profile, role or manifest)", def)}
			}
			schema, err := cue.Load()
			if err != nil {
				return err
			}
			b, err := schema.JSONSchema(d)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "%s\n", b)
			return err
		},
	}
	cmd.Flags().BoolVar(&asCUE, "cue", false, "print the CUE schema source")
	cmd.Flags().BoolVar(&install, "install", false, "write the profile schema to <agentDir>/facets/profile.schema.json (or <cwd>/.pi/facets with --project), where scaffolded profiles point")
	sf.register(cmd)
	cmd.MarkFlagsMutuallyExclusive("install", "cue")
	cmd.Flags().StringVar(&def, "def", "profile", "definition to render: profile (config.json), role (frontmatter) or manifest")
	completeValues(cmd, "def", "profile", "role", "manifest")
	return cmd
}

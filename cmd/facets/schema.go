package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/cue"
)

func newSchemaCmd(a *app) *cobra.Command {
	var asCUE bool
	var def string
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema (or the CUE schema) for editors",
		Long: `schema prints a JSON Schema (draft 2020-12) generated from the embedded CUE
schema. Save it and point "$schema" in config.json at it to get editor
validation. --cue prints the CUE source instead.`,
		Example: `  facets schema > ~/.pi/agent/facets/profile.schema.json
  facets schema --def role
  facets schema --cue`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
	cmd.Flags().StringVar(&def, "def", "profile", "definition to render: profile (config.json), role (frontmatter) or manifest")
	return cmd
}

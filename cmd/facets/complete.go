package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/cue"
)

// completeNames completes profile names (or, with roles set, role names)
// from the catalog that check would build with the command's flags (-C,
// --agent-dir, --trust, ...), which cobra has parsed by then. Names already
// on the command line are not offered again.
func (f *sourceFlags) completeNames(roles func() bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		opts, err := f.options()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		schema, err := cue.Load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names, err := compiler.CatalogNames(schema, opts)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list := names.Profiles
		if roles != nil && roles() {
			list = names.Roles
		}
		var out []cobra.Completion
		for _, n := range list {
			if strings.HasPrefix(n, toComplete) && !contains(args, n) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// completeValues registers the fixed values of a flag (--format, --def)
// as its completions.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

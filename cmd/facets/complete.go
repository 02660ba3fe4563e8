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

// valuesAnnotation prefixes the command annotation (followed by the flag's
// name) that holds a flag's fixed completion values, NUL-separated.
const valuesAnnotation = "facets.complete-values."

// completeValues records the fixed values of a flag (--format, --def) as
// its completions. They reach cobra only for a completion request
// (registerCompletions): cobra keeps flag completion functions in one
// process-wide map, keyed by flag, so registering them at every run would
// keep every run's command tree alive in a process that runs many, as the
// plan daemon does.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[valuesAnnotation+flag] = strings.Join(values, "\x00")
}

// isCompletionRequest reports whether args ask for shell completions
// (what the scripts of facets completion run).
func isCompletionRequest(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

// registerCompletions registers with cobra the values completeValues
// recorded on cmd and the commands below it.
func registerCompletions(cmd *cobra.Command) {
	for key, joined := range cmd.Annotations {
		if flag, ok := strings.CutPrefix(key, valuesAnnotation); ok {
			_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(strings.Split(joined, "\x00"), cobra.ShellCompDirectiveNoFileComp))
		}
	}
	for _, sub := range cmd.Commands() {
		registerCompletions(sub)
	}
}

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// strictArgs makes every argument error of root and its subcommands a
// usage error, and gives every command that only groups subcommands (root,
// new, channel, ...) a RunE that prints its help when called alone and
// refuses an unknown subcommand with a did-you-mean, where cobra would
// print the help and exit 0 (or, at the root, escape its newlines).
func strictArgs(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		strictArgs(sub)
	}
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		}
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		if cmd.Annotations == nil {
			cmd.Annotations = map[string]string{}
		}
		cmd.Annotations[groupAnnotation] = "true"
		return
	}
	if check := cmd.Args; check != nil {
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
}

// groupAnnotation marks a command that strictArgs made a group: it does
// nothing but print its help.
const groupAnnotation = "facets-group"

// unknownCommand is the usage error for a subcommand name cmd does not
// have, on one line, with the names it may have meant.
func unknownCommand(cmd *cobra.Command, name string) error {
	return notFound(cmd, fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath()), name)
}

// notFound is msg as a usage error on one line, with the subcommands of
// cmd that name may have meant and where to find the list.
func notFound(cmd *cobra.Command, msg, name string) error {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only in its own message
	}
	if near := cmd.SuggestionsFor(name); len(near) > 0 {
		msg += "; did you mean " + strings.Join(near, " or ") + "?"
	}
	return usageError{fmt.Errorf("%s (run '%s --help' for the list)", msg, cmd.CommandPath())}
}

// newHelpCmd replaces cobra's help command, which prints the root's help
// and exits 0 for a topic it does not know (facets help chek): here that is
// the usage error an unknown command is, with its did-you-mean.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.\nSimply type facets help [path to command] for full details.",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				found := root
				if err == nil {
					found = cmd
				} else if len(args) > 0 {
					rest = args
				}
				return notFound(found, fmt.Sprintf("unknown help topic %q", strings.Join(args, " ")), rest[0])
			}
			return cmd.Help()
		},
	}
}

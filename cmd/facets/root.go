package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/runtimeenv"
	"github.com/facets-dev/facets/internal/termesc"
)

// Exit codes shared by every command.
const (
	exitOK          = 0 // success, no error diagnostics
	exitDiagnostics = 1 // the input has error diagnostics (or warnings under --strict)
	exitUsage       = 2 // bad flags, arguments or subcommand (a usageError)
	exitFailure     = 3 // the command could not do its work: I/O, Herdr or the environment failed
)

// version, when set at link time with -ldflags "-X main.version=...",
// replaces the version read from the build info (see buildVersion).
var version string

// app carries the streams every command writes to and the environment it
// reads, so tests can run the whole CLI in process without global state.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// getenv reads one variable (names in internal/envvar); Main passes
	// os.Getenv, tests a map's lookup.
	getenv func(string) string
	// environ is the environment of the herdr processes facets starts (and
	// the PATH herdr is looked up on); Main passes os.Environ().
	environ []string
}

// errDiagnostics signals that diagnostics were already printed and the
// command should exit with exitDiagnostics.
var errDiagnostics = errors.New("diagnostics reported")

// diagnosed is the error a command ends with: errDiagnostics when it
// reported a problem that sets the exit status, else nil.
func diagnosed(failed bool) error {
	if failed {
		return errDiagnostics
	}
	return nil
}

// usageError marks errors caused by how the command was invoked; they,
// and cobra's own argument and flag errors, exit with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Main runs the facets CLI and returns its exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, environ: os.Environ()}).run(args)
}

// run runs the CLI with args and returns its exit code.
func (a *app) run(args []string) int {
	root := newRootCmd(a)
	if isCompletionRequest(args) {
		registerCompletions(root)
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if code != exitDiagnostics {
		fmt.Fprintf(a.stderr, "facets: %s\n", termesc.Escape(err.Error()))
	}
	return code
}

// exitCode is the exit status of a command that failed with err.
func exitCode(err error) int {
	var u usageError
	switch {
	case errors.Is(err, errDiagnostics):
		return exitDiagnostics
	case errors.As(err, &u):
		return exitUsage
	default:
		return exitFailure
	}
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "facets",
		Short:         "Compile Pi capability profiles and roles into a frozen launch manifest",
		Version:       buildVersion(version, debug.ReadBuildInfo),
		SilenceErrors: true,
		SilenceUsage:  true,
		// Flag groups (--trust/--no-trust) are checked here, before
		// RunE, so that breaking one is a usage error like a bad flag.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := cmd.ValidateFlagGroups(); err != nil {
				return usageError{err}
			}
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return usageError{err}
			}
			return nil
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newChannelCmd(a),
		newCheckCmd(a),
		newCompileCmd(a),
		newDelegateCmd(a),
		newInvokeCmd(a),
		newTalkCmd(a),
		newInterruptCmd(a),
		newCloseCmd(a),
		newListCmd(a),
		newLSPCmd(a),
		newExplainCmd(a),
		newHerdrVisibilityCmd(a),
		newPiExtensionCmd(a),
		newNewCmd(a),
		newProfilesCmd(a),
		newSchemaCmd(a),
		newVerifyCmd(a),
		newVersionCmd(a, root.Version),
	)
	// cobra adds its completion command only when it executes; add it now
	// so that strictArgs covers it (facets completion bogus).
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(newHelpCmd(root))
	strictArgs(root)
	return root
}

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

// home is the user's home directory, as os.UserHomeDir finds it on Unix.
func (a *app) home() string { return a.getenv(envvar.Home) }

// runtimeEnv is what the runtime commands read of the app's process.
func (a *app) runtimeEnv() runtimeenv.Env {
	return runtimeenv.Env{Getenv: a.getenv, Environ: a.environ, Home: a.home()}
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

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
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := cmd.ValidateFlagGroups(); err != nil {
				return usageError{err}
			}
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return usageError{err}
			}
			return checkNameLengths(cmd, args)
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
		newGCCmd(a),
		newLSPCmd(a),
		newExplainCmd(a),
		newHerdrVisibilityCmd(a),
		newPiExtensionCmd(a),
		newImportCmd(a),
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

// maxNameEcho is how much of a too long name a message repeats; it is
// also the longest profile name (profiles.ValidName).
const maxNameEcho = 64

// maxRoleName is the longest role name: a file name's stem (NAME_MAX).
const maxRoleName = 255

// checkNameLengths refuses a profile or role name (the arguments of check,
// compile, explain and new, and --profile) longer than a name can be: no
// profile has it, and a message repeating it whole would bury the rest.
func checkNameLengths(cmd *cobra.Command, args []string) error {
	var names []string
	switch cmd.Name() {
	case "check", "compile", "explain", "profile", "role":
		names = append(names, args...)
	}
	if f := cmd.Flags().Lookup("profile"); f != nil && f.Value.Type() == "string" {
		names = append(names, f.Value.String())
	}
	limit, what := maxNameEcho, "a profile name"
	if f := cmd.Flags().Lookup("role"); cmd.Name() == "explain" && f != nil && f.Value.String() == "true" {
		limit, what = maxRoleName, "a role name"
	}
	for _, n := range names {
		if r := []rune(n); len(r) > limit {
			return usageError{fmt.Errorf("name %q… (%d characters) is longer than %s can be (%d)", string(r[:maxNameEcho]), len(r), what, limit)}
		}
	}
	return nil
}

// home is the user's home directory, as os.UserHomeDir finds it on Unix.
func (a *app) home() string { return a.getenv(envvar.Home) }

// runtimeEnv is what the runtime commands read of the app's process.
func (a *app) runtimeEnv() runtimeenv.Env {
	return runtimeenv.Env{Getenv: a.getenv, Environ: a.environ, Home: a.home()}
}

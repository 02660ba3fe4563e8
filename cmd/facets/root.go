package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/termesc"
)

// Exit codes shared by every command.
const (
	exitOK          = 0 // success, no error diagnostics
	exitDiagnostics = 1 // the input has error diagnostics (or warnings under --strict)
	exitUsage       = 2 // bad flags or arguments, or an I/O failure
)

// version is overridden at link time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// app carries the streams every command writes to and the environment it
// reads, so tests can run the whole CLI in process without global state.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// getenv reads one variable (names in internal/envvar); Main passes
	// os.Getenv, tests a map's lookup.
	getenv func(string) string
	// environ is the environment of the herdr processes facets starts; nil
	// means this process's own.
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

// usageError marks errors caused by how the command was invoked.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Main runs the facets CLI and returns its exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}).run(args)
}

// run runs the CLI with args and returns its exit code.
func (a *app) run(args []string) int {
	root := newRootCmd(a)
	root.SetArgs(args)
	err := root.Execute()
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errDiagnostics):
		return exitDiagnostics
	default:
		fmt.Fprintf(a.stderr, "facets: %s\n", termesc.Escape(err.Error()))
		return exitUsage
	}
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "facets",
		Short:         "Compile Pi capability profiles and roles into a frozen launch manifest",
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
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
	)
	return root
}

// home is the user's home directory, as os.UserHomeDir finds it on Unix.
func (a *app) home() string { return a.getenv(envvar.Home) }

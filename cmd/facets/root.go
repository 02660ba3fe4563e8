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
	"github.com/facets-dev/facets/internal/termesc"
)

// Exit codes shared by every command.
const (
	exitOK          = 0 // success, no error diagnostics
	exitDiagnostics = 1 // the input has error diagnostics (or warnings under --strict)
	exitUsage       = 2 // bad flags or arguments, or an I/O failure
)

// version is overridden at link time with -ldflags "-X main.version=...".
var version = devVersion

const devVersion = "0.1.0-dev"

// buildVersion is the version this binary reports (facets --version, the Pi
// extension handshake): the link-time version, else the module version of
// a `go install ...@vX` build, else the development version with the VCS
// revision it was built from, when the build recorded one.
func buildVersion() string {
	if version != devVersion {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return strings.TrimPrefix(v, "v")
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = ".dirty"
		}
	}
	if rev == "" {
		return version
	}
	return version + "+" + rev + dirty
}

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

// usageError marks errors caused by how the command was invoked.
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
		Version:       buildVersion(),
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

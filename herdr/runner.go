package herdr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/facets-dev/facets/runtime/surface"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/facets-dev/facets/internal/envvar"
)

// Runner executes one herdr command line. Tests substitute the binary, not
// the adapter, so the Runner is the only seam.
type Runner interface {
	// Run executes herdr with args. A non-zero exit is reported in Result,
	// not as an error; err is for failures to run at all (missing binary,
	// killed by ctx).
	Run(ctx context.Context, args []string) (Result, error)
}

// Result is what one herdr invocation produced.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// BinaryPath picks the herdr executable: override (--herdr-bin or
// $FACETS_HERDR) when set, else $HERDR_BIN_PATH, the binary of the server
// this pane belongs to, else "herdr" looked up on PATH.
func BinaryPath(override string, getenv func(string) string) string {
	if override != "" {
		return override
	}
	if getenv != nil {
		if p := getenv(envvar.HerdrBinPath); p != "" {
			return p
		}
	}
	return "herdr"
}

// ErrNotInstalled reports that no herdr executable could be found; it is a
// surface.ErrUnavailable.
var ErrNotInstalled error = notInstalled{}

type notInstalled struct{}

func (notInstalled) Error() string        { return "herdr is not installed" }
func (notInstalled) Is(target error) bool { return target == surface.ErrUnavailable }

// ExecRunner runs the herdr executable as a child process.
type ExecRunner struct {
	// Path is the executable, looked up on Env's PATH when it has no slash.
	// Empty means "herdr".
	Path string
	// Env is the child's whole environment, resolved by the command layer
	// (cmd/facets passes os.Environ()); nil is an empty environment. The
	// runner never reads this process's environment itself, so what herdr
	// sees is exactly what the caller passed.
	Env []string
}

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, args []string) (Result, error) {
	path, err := r.resolve()
	if err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = r.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // exec would otherwise inherit os.Environ()
	}
	// A killed herdr may leave grandchildren holding the pipes; do not wait
	// for them forever.
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	var exitErr *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exitErr) && exitErr.Exited():
		res.ExitCode = exitErr.ExitCode()
	default:
		return res, runErr
	}
	return res, nil
}

func (r ExecRunner) resolve() (string, error) {
	name := r.Path
	if name == "" {
		name = "herdr"
	}
	if strings.ContainsRune(name, filepath.Separator) {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrNotInstalled, name, err)
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(envValue(r.Env, "PATH")) {
		if dir == "" {
			continue // an empty entry means ".", which a launcher must not trust
		}
		candidate := filepath.Join(dir, name)
		if executable(candidate) == nil {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("%w: %q not found on PATH", ErrNotInstalled, name)
}

func executable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

func envValue(env []string, name string) string {
	value := ""
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			value = v // the last assignment wins, as in exec
		}
	}
	return value
}

package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/surface"
)

// TabRequest is everything needed to open a Sub in a new tab.
type TabRequest struct {
	RunID string
	Title string
	Cwd   string
	// Env is set in the tab; it appears on herdr's command line, so it must
	// hold no secret (PI_FACETS_TOKEN is refused).
	Env []surface.EnvVar
	// TokenFile is the absolute path of a file, readable by its owner
	// only, that holds the Sub's capability token. Only the path travels,
	// as PI_FACETS_TOKEN_FILE.
	TokenFile string
	// Args are the pi arguments.
	Args     []string
	Metadata surface.Metadata
	// Prompt is the first prompt: a short fixed text, at most
	// herdr.MaxPromptBytes, since herdr takes it on its command line. The task
	// itself must travel privately (the runtime puts it in the channel).
	Prompt string
}

// CleanupError is a launch that failed after its tab existed and whose
// rollback close failed too. The tab may still be open: keep Handle and
// retry CloseTab.
type CleanupError struct {
	Handle  surface.Handle
	Launch  error
	Cleanup error
}

func (e *CleanupError) Error() string {
	return fmt.Sprintf("sub launch failed: %v; tab %s cleanup also failed: %v", e.Launch, e.Handle.TabID, e.Cleanup)
}

// Unwrap exposes both failures to errors.Is and errors.As.
func (e *CleanupError) Unwrap() []error { return []error{e.Launch, e.Cleanup} }

// OpenTab creates the tab, marks its pane as a Facets Sub, starts Pi in it
// and submits the first prompt. The pane is marked before Pi starts because
// Herdr keeps metadata tokens on the terminal, not the agent: a Sub is then
// never shown (or missed by the visibility filter) while it starts. Once a tab exists, any failure or cancellation of
// ctx closes it again using a context that is not cancelled; when that close
// fails too the error is a *CleanupError carrying the surface.Handle. On success the
// surface.Handle names tab, pane and agent.
func OpenTab(ctx context.Context, s surface.Surface, req TabRequest) (surface.Handle, error) {
	if err := ctx.Err(); err != nil {
		return surface.Handle{}, fmt.Errorf("%s launch: %w", s.Name(), err)
	}
	if err := checkTokenFile(req.TokenFile); err != nil {
		return surface.Handle{}, fmt.Errorf("%s launch: %w", s.Name(), err)
	}
	env := make([]surface.EnvVar, 0, len(req.Env)+1)
	for _, v := range req.Env {
		if v.Name == envvar.Token || v.Name == envvar.TokenFile {
			return surface.Handle{}, fmt.Errorf("%s launch: %w: %s must not be set in Env", s.Name(), surface.ErrSecretOnArgv, v.Name)
		}
		env = append(env, v)
	}
	env = append(env, surface.EnvVar{Name: envvar.TokenFile, Value: req.TokenFile})

	h, err := s.CreateTab(ctx, surface.TabSpec{Cwd: req.Cwd, Title: req.Title, Env: env})
	if h.TabID == "" {
		if err == nil {
			err = surface.ErrTabIDMissing
		}
		return surface.Handle{}, fmt.Errorf("%s launch: %w", s.Name(), err)
	}
	steps := []func() error{
		func() error { return err },
		func() error { return s.ReportMetadata(ctx, h, req.Metadata) },
		func() error {
			started, err := s.StartAgent(ctx, h, surface.AgentSpec{Name: surface.AgentName(req.RunID), Args: req.Args})
			if err == nil {
				h = started
			}
			return err
		},
		func() error {
			if !s.AgentAware() {
				return nil // the Sub submits its task itself (channel.Manifest.SelfStart)
			}
			st, err := s.Prompt(ctx, h, req.Prompt)
			if err == nil {
				seq := st.Seq
				h.PromptSeq = &seq
			}
			return err
		},
	}
	for _, step := range steps {
		err := step()
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return rollback(ctx, s, h, err)
		}
	}
	return h, nil
}

// rollback closes a half-launched tab. The caller's ctx may be the reason
// for the rollback, so its cancellation must not stop the close.
func rollback(ctx context.Context, s surface.Surface, h surface.Handle, cause error) (surface.Handle, error) {
	if cerr := s.CloseTab(context.WithoutCancel(ctx), h); cerr != nil {
		return h, &CleanupError{Handle: h, Launch: cause, Cleanup: cerr}
	}
	return surface.Handle{}, fmt.Errorf("%s launch (tab %s closed): %w", s.Name(), h.TabID, cause)
}

// checkTokenFile insists on an owner-only regular file, so moving the token
// off the command line does not just move it to a world-readable place.
func checkTokenFile(path string) error {
	if path == "" {
		return errors.New("no token file")
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("token file %q is not an absolute path", path)
	}
	info, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("token file %s is not a regular file", path)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("token file %s is accessible to other users (mode %v)", path, info.Mode().Perm())
	}
	return nil
}

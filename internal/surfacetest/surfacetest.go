// Package surfacetest is the contract every surface.Surface answers to,
// run by each adapter's tests: herdr's against the fake Herdr, tmux's
// against the real tmux. The runtime relies on nothing else of a surface.
package surfacetest

import (
	"context"
	"testing"

	"github.com/facets-dev/facets/runtime/surface"
)

// Run checks s, which open makes fresh for each case, in a place where a
// Sub can open (s.Check passes). args are arguments its agent can start
// with.
func Run(t *testing.T, open func(t *testing.T) surface.Surface, args []string) {
	ctx := context.Background()
	launch := func(t *testing.T, s surface.Surface, runID string) surface.Handle {
		t.Helper()
		h, err := s.CreateTab(ctx, surface.TabSpec{Cwd: t.TempDir(), Title: "contract " + runID, Env: []surface.EnvVar{{Name: "CONTRACT_RUN", Value: runID}}})
		if err != nil {
			t.Fatalf("CreateTab: %v", err)
		}
		if h.TabID == "" {
			t.Fatalf("CreateTab returned no tab id: %+v", h)
		}
		if err := s.ReportMetadata(ctx, h, surface.Metadata{MainSession: "main", RunID: runID, Profile: "p"}); err != nil {
			t.Fatalf("ReportMetadata: %v", err)
		}
		started, err := s.StartAgent(ctx, h, surface.AgentSpec{Name: surface.AgentName(runID), Args: args})
		if err != nil {
			t.Fatalf("StartAgent: %v", err)
		}
		if started.TabID != h.TabID {
			t.Fatalf("StartAgent moved the Sub from tab %s to %s", h.TabID, started.TabID)
		}
		if s.AgentAware() {
			if _, err := s.Prompt(ctx, started, "hello"); err != nil {
				t.Fatalf("Prompt: %v", err)
			}
		}
		return started
	}
	owned := func(t *testing.T, s surface.Surface, h surface.Handle, runID string, want surface.Existence) {
		t.Helper()
		if got, err := s.Owned(ctx, h, runID); got != want {
			t.Errorf("Owned(%s, %s) = %v (%v), want %v", h.TabID, runID, got, err, want)
		}
	}

	t.Run("check", func(t *testing.T) {
		s := open(t)
		if _, err := s.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
		if s.Name() == "" {
			t.Error("an adapter without a name: its runs could not find it again")
		}
	})
	// Whether a handle copied into another run's record is refused is the
	// adapter's own test: Herdr trusts a terminal id no later server
	// reuses, tmux the run id on the window.
	t.Run("a launched tab is the run's", func(t *testing.T) {
		s := open(t)
		h := launch(t, s, "run-a")
		owned(t, s, h, "run-a", surface.TabPresent)
		if s.AgentAware() {
			if st, err := s.Status(ctx, h); st == surface.StatusUnknown {
				t.Errorf("an agent-aware surface cannot tell a started agent's status: %v", err)
			}
		}
	})
	t.Run("close, twice", func(t *testing.T) {
		s := open(t)
		h := launch(t, s, "run-c")
		if err := s.CloseTab(ctx, h); err != nil {
			t.Fatalf("CloseTab: %v", err)
		}
		owned(t, s, h, "run-c", surface.TabGone)
		if err := s.CloseTab(ctx, h); err != nil {
			t.Errorf("CloseTab of a closed tab: %v, want it counted as closed", err)
		}
	})
	t.Run("tabs do not share", func(t *testing.T) {
		s := open(t)
		h1, h2 := launch(t, s, "run-1"), launch(t, s, "run-2")
		if h1.TabID == h2.TabID {
			t.Fatalf("two launches share tab %s", h1.TabID)
		}
		if err := s.CloseTab(ctx, h1); err != nil {
			t.Fatal(err)
		}
		owned(t, s, h2, "run-2", surface.TabPresent)
	})
}

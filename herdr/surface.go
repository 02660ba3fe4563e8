// Package herdr runs Facets Sub Pis in Herdr tabs: a Surface interface in
// domain terms, its implementation on the herdr command line, and the Launch
// transaction that rolls a half-created tab back.
package herdr

import "context"

// Surface is where a Sub Pi lives: a tab whose root pane runs an agent.
type Surface interface {
	// Check fails unless a usable Herdr is installed and running here.
	Check(ctx context.Context) error
	// CreateTab opens a background tab; the returned Handle has TabID and,
	// when Herdr reported it, PaneID.
	CreateTab(ctx context.Context, spec TabSpec) (Handle, error)
	// StartAgent launches the agent in the tab's root pane and returns once
	// Herdr reports it ready for input.
	StartAgent(ctx context.Context, h Handle, spec AgentSpec) (Handle, error)
	// ReportMetadata tags the pane so Herdr views (and the plugin) can tell
	// Facets Subs apart.
	ReportMetadata(ctx context.Context, h Handle, m Metadata) error
	// Prompt submits text to the agent as if typed by the user.
	Prompt(ctx context.Context, h Handle, text string) error
	// Status reports what the agent is doing; it is StatusUnknown, with an
	// error saying why, whenever Herdr cannot tell.
	Status(ctx context.Context, h Handle) (Status, error)
	// TabExists asks Herdr whether the tab is still open.
	TabExists(ctx context.Context, tabID string) (Existence, error)
	// CloseTab closes the tab and everything in it; a tab Herdr confirms is
	// already gone counts as closed.
	CloseTab(ctx context.Context, h Handle) error
}

// Handle identifies a Sub's place in Herdr. It is what a caller must keep to
// retry a close after a failed rollback.
type Handle struct {
	TabID  string `json:"tabId,omitempty"`
	PaneID string `json:"paneId,omitempty"`
	Agent  string `json:"agent,omitempty"`
}

// TabSpec describes the tab to create. Env values are passed to Herdr on its
// command line, so they must never hold a secret; see envvar.TokenFile.
type TabSpec struct {
	Cwd   string
	Title string
	Env   []EnvVar
}

// EnvVar is one environment variable set in the new tab's shell.
type EnvVar struct {
	Name  string
	Value string
}

// AgentSpec describes the agent to start in a tab.
type AgentSpec struct {
	// Name is the Herdr agent name; see AgentName.
	Name string
	// Args are passed to the pi executable after "--".
	Args []string
}

// Metadata is written as pane tokens (facets_role=sub and friends).
type Metadata struct {
	MainSession string
	RunID       string
	Profile     string
}

// Status is an agent's state as Facets uses it.
type Status string

// Agent states. Herdr's "done" (idle, tab not yet looked at) is StatusIdle.
const (
	StatusWorking Status = "working"
	StatusBlocked Status = "blocked"
	StatusIdle    Status = "idle"
	StatusUnknown Status = "unknown"
)

// Existence is the answer to "is this tab still open?".
type Existence int

// TabUncertain means Herdr gave no usable answer; callers must not treat it
// as either open or gone.
const (
	TabUncertain Existence = iota
	TabPresent
	TabGone
)

func (e Existence) String() string {
	switch e {
	case TabPresent:
		return "present"
	case TabGone:
		return "gone"
	default:
		return "uncertain"
	}
}

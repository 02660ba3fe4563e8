// Package surface is where the runtime puts a Sub Pi: the Surface interface
// the runtime drives (a Herdr tab, herdr.CLI; a tmux window, tmux.CLI) and
// the types it speaks in, so the runtime imports no adapter.
package surface

import (
	"context"
	"errors"
	"strings"
	"unicode"
)

// Errors a Surface returns that the runtime acts on.
var (
	// ErrUnavailable is wrapped by an adapter whose program is not
	// installed; the adapter's message already says where to get it.
	ErrUnavailable = errors.New("surface unavailable")
	// ErrTabIDMissing: the surface created a tab but its answer names none,
	// so nothing can close it again.
	ErrTabIDMissing = errors.New("herdr tab create response did not contain a tab ID; automatic cleanup is unavailable")
	// ErrSecretOnArgv refuses what would put a secret (the channel token, a
	// long task) on a command line.
	ErrSecretOnArgv = errors.New("refusing to put a secret on a command line")
)

// NormalizeTitle makes a title fit for a tab label and an agent name:
// control characters blanked, white space collapsed, at most 48 runes.
func NormalizeTitle(title string) string {
	title = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, title)
	title = strings.Join(strings.Fields(title), " ")
	if r := []rune(title); len(r) > 48 {
		title = strings.TrimSpace(string(r[:48]))
	}
	if title == "" {
		return "delegated task"
	}
	return title
}

// AgentName is the agent name of a run: "sub-" and the first 20 of the run
// ID's characters an agent name allows ([a-z0-9_-]).
func AgentName(runID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(runID) {
		if b.Len() == 20 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		}
	}
	return "sub-" + b.String()
}

// Surface is where a Sub Pi lives: a tab (a tmux window) whose root pane
// runs an agent.
type Surface interface {
	// Name is the adapter's name ("herdr", "tmux"), which a run records so
	// it is always listed and closed through the adapter that opened it.
	Name() string
	// AgentAware reports whether the surface runs agents itself: it types
	// the first prompt (Prompt) and reports the agent's state (Status,
	// State). A surface that is not (tmux) starts the Sub's program and no
	// more; the Sub then starts its task itself and reports its state
	// through its channel.
	AgentAware() bool
	// Check fails unless the surface is installed and the caller runs
	// inside it (a Herdr pane, a tmux client's pane). On success it
	// returns the one-line notes the user should see with the launch's
	// result (a Herdr newer than Facets follows), since a Pi user never
	// sees the stderr of a command that succeeded.
	Check(ctx context.Context) (notes []string, err error)
	// CreateTab opens a background tab; the returned Handle has TabID and,
	// when Herdr reported it, PaneID.
	CreateTab(ctx context.Context, spec TabSpec) (Handle, error)
	// StartAgent launches the agent in the tab's root pane and returns once
	// Herdr reports it ready for input.
	StartAgent(ctx context.Context, h Handle, spec AgentSpec) (Handle, error)
	// ReportMetadata tags the pane so Herdr views (and the plugin) can tell
	// Facets Subs apart. Herdr keeps the tokens on the pane's terminal, so
	// they can be reported before the agent starts.
	ReportMetadata(ctx context.Context, h Handle, m Metadata) error
	// Prompt submits text to the agent as if typed by the user. The state
	// returned is the agent's before the submission: Herdr presses Enter
	// only after it answered, so an idle agent here has not started yet.
	Prompt(ctx context.Context, h Handle, text string) (AgentState, error)
	// Status reports what the agent is doing; it is StatusUnknown, with an
	// error saying why, whenever Herdr cannot tell.
	Status(ctx context.Context, h Handle) (Status, error)
	// State is Status with Herdr's state-change sequence.
	State(ctx context.Context, h Handle) (AgentState, error)
	// Owned asks Herdr whether h still names the pane this launch created
	// for runID: TabPresent only when it does, TabGone when the pane is
	// gone, belongs to another server or session, or is someone else's
	// (ids restart in a fresh server, so a stored id may name an unrelated
	// tab), TabUncertain when Herdr gives no usable answer.
	Owned(ctx context.Context, h Handle, runID string) (Existence, error)
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
	// TerminalID is the root pane's terminal as Herdr reported it at tab
	// create; terminal ids are time-based, so unlike tab and pane ids they
	// are not reused by a later server.
	TerminalID string `json:"terminalId,omitempty"`
	// Socket and Session name the Herdr server the tab was created in
	// ($HERDR_SOCKET_PATH and $HERDR_SESSION of the launching process).
	Socket  string `json:"socket,omitempty"`
	Session string `json:"session,omitempty"`
	// PromptSeq is the agent's state-change sequence when the first prompt
	// was submitted; the same sequence later means the agent has not yet
	// taken the prompt up.
	PromptSeq *int64 `json:"promptSeq,omitempty"`
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

// AgentState is one observation of an agent: its status and Herdr's
// state_change_seq, which advances on every status transition.
type AgentState struct {
	Status Status
	Seq    int64
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

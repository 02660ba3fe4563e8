// Package fakectl is the contract between the fake herdr (internal/fakeherdr)
// and its test driver (internal/herdrtest): control.json, which the test
// writes, and state.json, which the test reads, each defined once so the
// two cannot drift apart.
package fakectl

// Control is the test's script for the fake herdr, read from control.json:
// which commands fail, hang or answer malformed output, and how agents behave.
type Control struct {
	// Version printed by --version, and the Herdr the fake answers as:
	// 0.8.2 (the default) or, from 0.9.0, the 0.9 line.
	Version string `json:"version,omitempty"`
	// ServerVersion is the running server's version when it differs from
	// the herdr binary's (an update that did not restart the server).
	ServerVersion string `json:"server_version,omitempty"`
	// Protocol overrides the wire protocol of both (by default 20 up to
	// 0.8, 22 from 0.9).
	Protocol int `json:"protocol,omitempty"`
	// ExtraFields adds fields this Facets does not know to every answer
	// object, as a newer Herdr would.
	ExtraFields bool `json:"extra_fields,omitempty"`
	// Server is "running" (default), "not_running" or "incompatible".
	Server string `json:"server,omitempty"`
	// Fail makes a command ("tab create", "agent start", ...) fail.
	Fail map[string]Failure `json:"fail,omitempty"`
	// Hang makes a command block until killed, after writing the marker
	// file hanging-<command with _ for spaces>.
	Hang []string `json:"hang,omitempty"`
	// Malformed makes a command succeed but print a broken response:
	// "garbage", "empty", "truncated", "no-tab-id", "no-pane-id",
	// "wrong-pane", "wrong-tab".
	Malformed map[string]string `json:"malformed,omitempty"`
	// AgentStatus, when set, is what agent get reports for every agent.
	AgentStatus string `json:"agent_status,omitempty"`
	// ShellInitMS is how long a new tab's shell initializes; agent start
	// meanwhile answers agent_pane_busy, which herdr's CLI retries for up
	// to 2 s (src/cli/agent.rs PANE_SHELL_READINESS_RETRY_TIMEOUT).
	ShellInitMS int `json:"shell_init_ms,omitempty"`
	// StartDelayMS is how long a started agent stays launch_pending before
	// it is interactive_ready (real Herdr: at least its 3 s settle delay).
	StartDelayMS int `json:"start_delay_ms,omitempty"`
	// Startup is how the agent's startup ends: "" (ready), "blocked" (a
	// startup dialog: agent_not_ready), "exit" (agent_start_failed) or
	// "pending" (Herdr issue 3853: idle but launch_pending for ever, so
	// agent start ends in timeout) or "undetected" (the process never
	// shows as pi: unknown and launch_pending until the timeout, which
	// frees the name).
	Startup string `json:"startup,omitempty"`
	// PromptSubmitMS is the delay between agent prompt's answer and the
	// Enter that makes the agent working (Herdr's
	// AGENT_PROMPT_SUBMIT_DELAY, 300 ms); negative means never.
	PromptSubmitMS *int `json:"prompt_submit_ms,omitempty"`
	// TurnMS, when positive, ends each turn that long after it started:
	// the agent goes back to idle ("done" in an unseen tab).
	TurnMS int `json:"turn_ms,omitempty"`
	// ConfirmClose makes closing the last tab of a workspace answer
	// confirmation_required, as Herdr does for a worktree group.
	ConfirmClose bool `json:"confirm_close,omitempty"`
	// Unavailable lists panes whose terminal has no live runtime
	// (agent start: agent_pane_unavailable).
	Unavailable []string `json:"unavailable,omitempty"`
}

// Failure is one injected error.
type Failure struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Exit defaults to 1 (a server error envelope on stderr); 2 prints the
	// message as usage text instead.
	Exit int `json:"exit,omitempty"`
	// AfterEffect performs the command and prints its result before
	// failing, like a herdr that did the work but then lost the reply.
	AfterEffect bool `json:"after_effect,omitempty"`
}

// State is the fake's state.json: every workspace, tab and pane, and the
// agent started in each pane.
type State struct {
	Workspaces map[string]*Workspace `json:"workspaces"`
	// NextWorkspace numbers the next workspace id; ActiveWorkspace is the
	// focused one.
	NextWorkspace   int              `json:"next_workspace"`
	ActiveWorkspace string           `json:"active_workspace,omitempty"`
	Tabs            map[string]*Tab  `json:"tabs"`
	Panes           map[string]*Pane `json:"panes"`
	NextTerminal    int              `json:"next_terminal"`
}

// Workspace is a Herdr workspace and the numbers of its next tab and pane.
type Workspace struct {
	ID       string `json:"id"`
	Label    string `json:"label,omitempty"`
	NextTab  int    `json:"next_tab"`
	NextPane int    `json:"next_pane"`
}

// Tab is a tab of a workspace.
type Tab struct {
	ID          string            `json:"id"`
	WorkspaceID string            `json:"workspace_id"`
	Number      int               `json:"number"`
	Label       string            `json:"label"`
	Focused     bool              `json:"focused"`
	Seen        bool              `json:"seen,omitempty"`
	Panes       []string          `json:"panes"`
	Env         map[string]string `json:"env,omitempty"`
}

// Pane is a pane of a tab, with the agent started in it.
type Pane struct {
	ID          string `json:"id"`
	TerminalID  string `json:"terminal_id"`
	WorkspaceID string `json:"workspace_id"`
	TabID       string `json:"tab_id"`
	Cwd         string `json:"cwd,omitempty"`
	// Tokens are the terminal's metadata tokens: Herdr keeps them on the
	// terminal, so they outlive agent starts and exits in the pane.
	Tokens map[string]string `json:"tokens,omitempty"`
	Source string            `json:"metadata_source,omitempty"`
	// ShellReadyAt (unix ms) ends the new shell's initialization.
	ShellReadyAt int64  `json:"shell_ready_at,omitempty"`
	Agent        *Agent `json:"agent,omitempty"`
}

// Agent is an agent started in a pane.
type Agent struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Status  string   `json:"status"`
	Args    []string `json:"args,omitempty"`
	Prompts []string `json:"prompts,omitempty"`
	Seq     int      `json:"seq"`
	// ReadyAt (unix ms) ends the launch-pending phase.
	ReadyAt int64 `json:"ready_at,omitempty"`
	// EnterAt (unix ms) is when a typed prompt's Enter lands; 0 when none
	// is pending.
	EnterAt int64 `json:"enter_at,omitempty"`
	// TurnEndsAt (unix ms) ends the current turn when TurnMS is set.
	TurnEndsAt int64 `json:"turn_ends_at,omitempty"`
	// Exited is an agent whose process ended while its tab stayed open.
	Exited bool `json:"exited,omitempty"`
	// Stuck is a launch that settled idle but stays launch_pending
	// (control Startup "pending", Herdr issue 3853).
	Stuck bool `json:"stuck,omitempty"`
	// Reported is an agent that only a pane report-agent made known: no
	// agent process runs in the pane (the shell is in the foreground).
	Reported bool `json:"reported,omitempty"`
	// Ready is a managed launch that reached interactive_ready (Herdr's
	// ManagedAgentPhase::Active); a blocked report afterwards keeps it.
	Ready bool `json:"ready,omitempty"`
	// Dropped is a managed launch Herdr ended at its deadline
	// (reconcile_managed_agent_at in src/terminal/state.rs): the name is
	// free and the agent is neither launch_pending nor interactive_ready.
	Dropped bool `json:"dropped,omitempty"`
	// Unknown is a pane whose process Herdr never detected as an agent,
	// once its launch was dropped: agent get, list and prompt do not see
	// it, and the process still holds the pane.
	Unknown bool `json:"unknown,omitempty"`
}

// Managed reports whether the agent is a launch of agent start that Herdr
// still tracks.
func (a *Agent) Managed() bool { return !a.Reported && !a.Dropped }

// Pending reports whether the agent is still launch_pending at now.
func (a *Agent) Pending(now int64) bool { return now < a.ReadyAt }

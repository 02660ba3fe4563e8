package herdr

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/surface"
)

// Errors a caller may want to tell apart; every one is wrapped with context.
var (
	ErrTooOld           = errors.New("herdr is too old")
	ErrNotInHerdr       = errors.New("not running inside a Herdr pane (HERDR_ENV=1 and HERDR_WORKSPACE_ID are required)")
	ErrServerNotRunning = errors.New("no Herdr server is running")
	// ErrLaunchPending is an agent start that ran out of time while Herdr
	// still counted the launch as pending (launch_pending, not
	// interactive_ready), whatever state Pi itself reported: herdr's own
	// timeout answer, or no answer while agent get shows the launch pending.
	ErrLaunchPending = errors.New("the agent is still launch_pending in Herdr")
)

// Timeouts bound each herdr call. Zero fields take the default of
// DefaultTimeouts.
type Timeouts struct {
	Check, Create, Start, Mark, Prompt, Status, Exists, Close time.Duration
	// Ready is agent start's --timeout: how long herdr itself waits for Pi
	// to become ready (herdr accepts more than 3 s and at most 300 s).
	// Start, the limit of the whole herdr process, must exceed it so that
	// herdr's own answer comes first.
	Ready time.Duration
}

// DefaultTimeouts bound each herdr call so a hung server cannot hang a
// delegate. Start exceeds the 60 s readiness wait passed to herdr (Ready)
// so herdr's own timeout answers first.
func DefaultTimeouts() Timeouts {
	return Timeouts{
		Check:  3 * time.Second,
		Create: 15 * time.Second,
		Start:  70 * time.Second,
		Mark:   10 * time.Second,
		Prompt: 20 * time.Second,
		Status: 3 * time.Second,
		Exists: 3 * time.Second,
		Close:  10 * time.Second,
		Ready:  60 * time.Second,
	}
}

// CLI is the Surface implemented by running the herdr command line.
type CLI struct {
	// Runner runs herdr; an ExecRunner in production, the same one pointed
	// at a fake binary in tests.
	Runner Runner
	// Getenv reads this process's environment (HERDR_ENV,
	// HERDR_WORKSPACE_ID); nil means os.Getenv is not consulted and every
	// variable is empty.
	Getenv func(string) string
	// Timeouts per call; zero fields use DefaultTimeouts.
	Timeouts Timeouts
}

var _ Surface = (*CLI)(nil)

// NewCLI returns the Surface that runs the herdr at path (see BinaryPath;
// a bare name is looked up on env's PATH), with env as its whole
// environment and getenv as the source of the pane's Herdr
// variables.
func NewCLI(path string, getenv func(string) string, env []string) *CLI {
	return &CLI{Runner: ExecRunner{Path: path, Env: env}, Getenv: getenv}
}

// CommandError is a herdr invocation that exited non-zero.
type CommandError struct {
	Command  string // e.g. "tab create"
	ExitCode int
	Code     string // herdr's error code, when it printed an error envelope
	Message  string // herdr's error message, or an excerpt of its output
}

func (e *CommandError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("herdr %s: %s: %s", e.Command, e.Code, e.Message)
	}
	if e.Message == "" {
		return fmt.Sprintf("herdr %s: exit status %d", e.Command, e.ExitCode)
	}
	return fmt.Sprintf("herdr %s: exit status %d: %s", e.Command, e.ExitCode, e.Message)
}

func (c *CLI) getenv(name string) string {
	if c.Getenv == nil {
		return ""
	}
	return c.Getenv(name)
}

func (c *CLI) timeout(pick func(Timeouts) time.Duration) time.Duration {
	if d := pick(c.Timeouts); d > 0 {
		return d
	}
	return pick(DefaultTimeouts())
}

// run executes one herdr command. The Result is returned even on error so
// tab create can still recover a tab ID from a failed call.
func (c *CLI) run(ctx context.Context, command string, limit time.Duration, args []string) (Result, error) {
	if c.Runner == nil {
		return Result{}, fmt.Errorf("herdr %s: no runner configured", command)
	}
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := c.Runner.Run(runCtx, args)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return res, fmt.Errorf("herdr %s: no answer within %s: %w", command, limit, err)
		}
		return res, fmt.Errorf("herdr %s: %w", command, err)
	}
	if res.ExitCode != 0 {
		return res, commandError(command, res)
	}
	return res, nil
}

func commandError(command string, res Result) *CommandError {
	e := &CommandError{Command: command, ExitCode: res.ExitCode}
	if he, ok := parseErrorEnvelope(res.Stderr); ok {
		e.Code, e.Message = he.Code, he.Message
		return e
	}
	out := res.Stderr
	if len(strings.TrimSpace(string(out))) == 0 {
		out = res.Stdout
	}
	e.Message = excerpt(out)
	return e
}

// hasCode reports whether err is a herdr error envelope with that code.
func hasCode(err error, code string) bool {
	var ce *CommandError
	return errors.As(err, &ce) && ce.Code == code
}

// Check verifies the installed herdr is new enough, that this process runs
// inside a Herdr pane, and that the server answers and can be driven by
// this herdr. It never suggests a fallback: without Herdr, Facets cannot
// launch a Sub. A herdr or server newer than the release Facets follows
// for its line (see modelledFor) is used, with one warning note.
func (c *CLI) Check(ctx context.Context) ([]string, error) {
	limit := c.timeout(func(t Timeouts) time.Duration { return t.Check })
	res, err := c.run(ctx, "--version", limit, []string{"--version"})
	if errors.Is(err, ErrNotInstalled) {
		return nil, fmt.Errorf("%w; Facets runs Subs in %s: get it from https://herdr.dev and start Pi inside a Herdr pane", err, SupportedVersions)
	}
	if err != nil {
		return nil, fmt.Errorf("facets requires Herdr %s or newer: %w", MinVersion, err)
	}
	v, err := parseVersion(firstLine(res.Stdout))
	if err != nil {
		return nil, fmt.Errorf("herdr --version: %w", err)
	}
	if v.Less(MinVersion) {
		return nil, fmt.Errorf("%w: found %s, Facets requires %s or newer because %s", ErrTooOld, v, MinVersion, minVersionReason)
	}
	if c.getenv(envvar.HerdrEnv) != "1" || c.getenv(envvar.HerdrWorkspaceID) == "" {
		return nil, ErrNotInHerdr
	}
	// Plain "status server" exits 0 even when no server runs, so only the
	// JSON form can answer the question.
	res, err = c.run(ctx, "status server", limit, []string{"status", "server", "--json"})
	if err != nil {
		return nil, err
	}
	var st struct {
		Running    *bool   `json:"running"`
		Version    *string `json:"version"`
		Compatible *bool   `json:"compatible"`
		Socket     string  `json:"socket"`
	}
	if err := decodeResult(res.Stdout, &st); err != nil {
		return nil, fmt.Errorf("herdr status server: %w", err)
	}
	if st.Running == nil {
		return nil, fmt.Errorf("herdr status server: unexpected response %q", excerpt(res.Stdout))
	}
	if !*st.Running {
		return nil, fmt.Errorf("%w at %s; start Herdr first", ErrServerNotRunning, st.Socket)
	}
	server, known := Version{}, false
	if st.Version != nil {
		server, err = parseVersion(*st.Version)
		known = err == nil
	}
	if known && server.Less(MinVersion) {
		return nil, fmt.Errorf("%w: the running server is %s, Facets requires %s or newer because %s", ErrTooOld, server, MinVersion, minVersionReason)
	}
	// compatible is the server's wire protocol against this herdr's (0.9
	// prints it as private_protocol_compatible): a 0.9 herdr refuses a 0.8
	// server outright, and 0.8.2 a 0.9 server, while within the 0.9 line a
	// herdr drives a server of another release.
	if st.Compatible != nil && !*st.Compatible {
		if known && server != v {
			return nil, fmt.Errorf("herdr status server: herdr %s cannot drive the running Herdr %s server, which speaks another wire protocol; restart Herdr with herdr %s, or point Facets at the herdr that started the server (--herdr-bin)", v, server, v)
		}
		return nil, fmt.Errorf("herdr status server: the running server speaks another protocol than this herdr binary; restart Herdr")
	}
	// One note is enough: the newer of the two is named, or the other if
	// only it is newer than the release Facets follows for its line.
	found := []Version{v}
	if known {
		found = append(found, server)
		if v.Less(server) {
			found[0], found[1] = server, v
		}
	}
	for _, x := range found {
		if m := modelledFor(x); m.Less(x) {
			what := "the newest Herdr Facets follows"
			if x.Major == m.Major && x.Minor == m.Minor {
				what = fmt.Sprintf("the newest %d.%d release Facets follows", m.Major, m.Minor)
			}
			return []string{fmt.Sprintf("Warning: Herdr %s is newer than %s, %s; going on as with %s.", x, m, what, m)}, nil
		}
	}
	return nil, nil
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// CreateTab runs `herdr tab create` in the current workspace without
// focusing the new tab.
func (c *CLI) CreateTab(ctx context.Context, spec TabSpec) (Handle, error) {
	const command = "tab create"
	workspace := c.getenv(envvar.HerdrWorkspaceID)
	if workspace == "" {
		return Handle{}, fmt.Errorf("herdr %s: %w", command, ErrNotInHerdr)
	}
	if spec.Cwd == "" {
		return Handle{}, fmt.Errorf("herdr %s: no working directory", command)
	}
	args := []string{"tab", "create", "--workspace", workspace, "--cwd", spec.Cwd, "--label", TabLabel(spec.Title)}
	for _, v := range spec.Env {
		if err := checkEnvVar(v); err != nil {
			return Handle{}, fmt.Errorf("herdr %s: %w", command, err)
		}
		args = append(args, "--env", v.Name+"="+v.Value)
	}
	args = append(args, "--no-focus")

	res, runErr := c.run(ctx, command, c.timeout(func(t Timeouts) time.Duration { return t.Create }), args)
	var created struct {
		Tab *struct {
			TabID string `json:"tab_id"`
			ID    string `json:"id"`
		} `json:"tab"`
		RootPane *struct {
			PaneID     string `json:"pane_id"`
			TerminalID string `json:"terminal_id"`
		} `json:"root_pane"`
		Pane *struct {
			PaneID string `json:"pane_id"`
		} `json:"pane"`
	}
	parseErr := decodeResult(res.Stdout, &created)
	h := Handle{Socket: c.getenv(envvar.HerdrSocketPath), Session: c.getenv(envvar.HerdrSession)}
	if parseErr == nil && created.Tab != nil {
		h.TabID = cmp.Or(created.Tab.TabID, created.Tab.ID)
	}
	if parseErr == nil && created.RootPane != nil {
		h.PaneID, h.TerminalID = created.RootPane.PaneID, created.RootPane.TerminalID
	}
	if h.PaneID == "" && parseErr == nil && created.Pane != nil {
		h.PaneID = created.Pane.PaneID
	}
	switch {
	case h.TabID == "" && runErr != nil:
		return Handle{}, runErr
	case h.TabID == "" && parseErr != nil:
		return Handle{}, fmt.Errorf("%w: %v", ErrTabIDMissing, parseErr)
	case h.TabID == "":
		return Handle{}, fmt.Errorf("%w: %q", ErrTabIDMissing, excerpt(res.Stdout))
	case runErr != nil:
		return h, runErr
	case h.PaneID == "":
		return h, fmt.Errorf("herdr %s: response for tab %s did not contain a root pane ID", command, h.TabID)
	}
	return h, nil
}

func checkEnvVar(v EnvVar) error {
	switch {
	case v.Name == "" || strings.ContainsAny(v.Name, "=\x00"):
		return fmt.Errorf("invalid environment variable name %q", v.Name)
	case strings.ContainsRune(v.Value, 0):
		return fmt.Errorf("environment variable %s contains a NUL byte", v.Name)
	case v.Name == envvar.Token:
		// Herdr's tab create only takes variables as --env K=V arguments,
		// visible to every local user in the process table.
		return fmt.Errorf("%w: pass the token by file (%s), not as %s", ErrSecretOnArgv, envvar.TokenFile, envvar.Token)
	}
	return nil
}

// TabLabel is the tab label for a Sub title: "↳ pi · " and the title with
// control characters blanked, whitespace collapsed and at most 48 runes.
func TabLabel(title string) string {
	return "↳ pi · " + surface.NormalizeTitle(title)
}

// validAgentName reports whether name matches Herdr's agent-name rule,
// ^[a-z][a-z0-9_-]{0,31}$.
func validAgentName(name string) bool {
	if len(name) == 0 || len(name) > 32 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// StartAgent runs `herdr agent start NAME --kind pi` in the tab's root pane.
// herdr itself waits, up to Timeouts.Ready (60 s), until Pi is detected
// and ready for input, so a nil error means the agent is ready. When that
// wait ends without an answer (herdr's timeout, or no answer within
// Timeouts.Start), the pane is asked once more: herdr's timeout, or a
// launch Herdr still holds as launch_pending, is ErrLaunchPending with
// Pi's reported state and the timeout.
// Name is "herdr": the adapter a run launched here records.
func (c *CLI) Name() string { return "herdr" }

// AgentAware is true: Herdr types the first prompt and reports the agent's
// state.
func (c *CLI) AgentAware() bool { return true }

func (c *CLI) StartAgent(ctx context.Context, h Handle, spec AgentSpec) (Handle, error) {
	const command = "agent start"
	if h.PaneID == "" {
		return h, fmt.Errorf("herdr %s: no pane", command)
	}
	if !validAgentName(spec.Name) {
		return h, fmt.Errorf("herdr %s: invalid agent name %q", command, spec.Name)
	}
	ready := c.timeout(func(t Timeouts) time.Duration { return t.Ready })
	args := []string{"agent", "start", spec.Name, "--kind", "pi", "--pane", h.PaneID,
		"--timeout", strconv.FormatInt(ready.Milliseconds(), 10)}
	if len(spec.Args) > 0 {
		args = append(append(args, "--"), spec.Args...)
	}
	res, err := c.run(ctx, command, c.timeout(func(t Timeouts) time.Duration { return t.Start }), args)
	if hasCode(err, "timeout") || ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return h, c.startTimedOut(ctx, h, ready, err)
	}
	if err != nil {
		return h, err
	}
	var started struct {
		Type  string `json:"type"`
		Agent *struct {
			Name   string `json:"name"`
			PaneID string `json:"pane_id"`
		} `json:"agent"`
	}
	if err := decodeResult(res.Stdout, &started); err != nil {
		return h, fmt.Errorf("herdr %s: %w", command, err)
	}
	if started.Type != "agent_started" || started.Agent == nil || started.Agent.PaneID != h.PaneID {
		return h, fmt.Errorf("herdr %s: unexpected response %q", command, excerpt(res.Stdout))
	}
	h.Agent = spec.Name
	return h, nil
}

// startTimedOut explains an agent start that ran out of time. herdr's own
// `timeout` means its wait for interactive_ready ran out while Herdr still
// held the launch as launch_pending, and Herdr has dropped the launch by
// the time the CLI answers (its last agent get reconciles the deadline:
// src/cli/agent.rs wait_for_named_agent, src/terminal/state.rs
// reconcile_managed_agent_at), so a later agent get no longer shows
// launch_pending; it only tells what Pi reported. Herdr issue 3853 is a Pi
// with Herdr's lifecycle integration that reports idle but never becomes
// interactive_ready. Without herdr's answer (Timeouts.Start ran out
// first) the launch is still Herdr's, and agent get shows whether it is
// still pending.
func (c *CLI) startTimedOut(ctx context.Context, h Handle, ready time.Duration, err error) error {
	const command = "agent start"
	res, getErr := c.run(ctx, "agent get", c.timeout(func(t Timeouts) time.Duration { return t.Status }),
		[]string{"agent", "get", h.PaneID})
	var info struct {
		Agent *struct {
			PaneID           string `json:"pane_id"`
			AgentStatus      string `json:"agent_status"`
			LaunchPending    bool   `json:"launch_pending"`
			InteractiveReady bool   `json:"interactive_ready"`
		} `json:"agent"`
	}
	known := getErr == nil && decodeResult(res.Stdout, &info) == nil && info.Agent != nil && info.Agent.PaneID == h.PaneID
	herdrTimedOut := hasCode(err, "timeout")
	if !herdrTimedOut && !(known && info.Agent.LaunchPending && !info.Agent.InteractiveReady) {
		return fmt.Errorf("herdr %s: Pi was not ready within the %s start timeout: %w", command, ready, err)
	}
	state := "no agent is known in the pane"
	if known {
		state = fmt.Sprintf("pane %s reports agent_status %q", h.PaneID, info.Agent.AgentStatus)
	}
	hint := ""
	if known && (info.Agent.AgentStatus == "idle" || info.Agent.AgentStatus == "done") {
		hint = " (a Pi with Herdr's lifecycle integration started through agent start can report idle yet stay launch_pending: Herdr issue 3853)"
	}
	return fmt.Errorf("herdr %s: %w: Herdr held the launch in pane %s as launch_pending, never interactive_ready, until the %s start timeout ran out, so no task was sent; %s%s: %w",
		command, ErrLaunchPending, h.PaneID, ready, state, hint, err)
}

func decodeResult(stdout []byte, v any) error {
	raw, err := parseEnvelope(stdout)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("unexpected response %q: %v", excerpt(raw), err)
	}
	return nil
}

// Herdr's limits on metadata tokens (src/app/api_helpers.rs): keys are
// [A-Za-z0-9_-]{1,32}, one report sets at most 16, and a value is trimmed,
// stripped of control characters and cut to 80 characters. An empty value
// clears the token instead of setting it.
const (
	maxTokensPerReport = 16
	maxTokenKeyLen     = 32
	maxTokenValueChars = 80
)

// Token is one pane metadata token.
type Token struct{ Key, Value string }

// Tokens are the facets_* tokens of m, in a fixed order. Empty values are
// left out: Herdr would read them as "clear this token".
func Tokens(m Metadata) []Token {
	all := []Token{
		{"facets_role", "sub"},
		{"facets_main_session", m.MainSession},
		{"facets_run_id", m.RunID},
		{"facets_profile", m.Profile},
	}
	out := all[:0]
	for _, t := range all {
		if t.Value != "" {
			out = append(out, t)
		}
	}
	return out
}

// checkTokens refuses what Herdr would reject or silently change, so a
// token the plugin or an ownership check relies on is stored exactly.
func checkTokens(tokens []Token) error {
	if len(tokens) > maxTokensPerReport {
		return fmt.Errorf("%d metadata tokens; Herdr accepts at most %d per report", len(tokens), maxTokensPerReport)
	}
	for _, t := range tokens {
		if !validTokenKey(t.Key) {
			return fmt.Errorf("metadata token key %q: Herdr allows 1-%d ASCII letters, digits, '_' and '-'", t.Key, maxTokenKeyLen)
		}
		if t.Value == "" {
			return fmt.Errorf("metadata token %s is empty; Herdr would clear it instead of setting it", t.Key)
		}
		if n := utf8.RuneCountInString(t.Value); n > maxTokenValueChars {
			return fmt.Errorf("metadata token %s is %d characters; Herdr keeps only the first %d", t.Key, n, maxTokenValueChars)
		}
		if strings.TrimSpace(t.Value) != t.Value || strings.IndexFunc(t.Value, unicode.IsControl) >= 0 {
			return fmt.Errorf("metadata token %s has surrounding blanks or control characters, which Herdr would strip", t.Key)
		}
	}
	return nil
}

func validTokenKey(k string) bool {
	if k == "" || len(k) > maxTokenKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ReportMetadata runs `herdr pane report-metadata` with the facets_* tokens
// the visibility plugin filters on and Owned checks.
func (c *CLI) ReportMetadata(ctx context.Context, h Handle, m Metadata) error {
	const command = "pane report-metadata"
	if h.PaneID == "" {
		return fmt.Errorf("herdr %s: no pane", command)
	}
	tokens := Tokens(m)
	if err := checkTokens(tokens); err != nil {
		return fmt.Errorf("herdr %s: %w", command, err)
	}
	args := []string{"pane", "report-metadata", h.PaneID, "--source", "facets"}
	for _, t := range tokens {
		args = append(args, "--token", t.Key+"="+t.Value)
	}
	_, err := c.run(ctx, command, c.timeout(func(t Timeouts) time.Duration { return t.Mark }), args)
	return err
}

// MaxPromptBytes bounds what Prompt puts on herdr's command line, which
// every local user can read in the process table and which Linux caps at
// 128 KiB per argument. Tasks travel in the Sub's channel instead.
const MaxPromptBytes = 4096

// Prompt runs `herdr agent prompt NAME TEXT`. Herdr types the text, answers
// with the agent's state at that moment and presses Enter 300 ms later, so
// the state returned is the one before the prompt was taken up.
func (c *CLI) Prompt(ctx context.Context, h Handle, text string) (AgentState, error) {
	const command = "agent prompt"
	if h.Agent == "" {
		return AgentState{Status: StatusUnknown}, fmt.Errorf("herdr %s: no agent", command)
	}
	if strings.TrimSpace(text) == "" {
		return AgentState{Status: StatusUnknown}, fmt.Errorf("herdr %s: empty prompt", command)
	}
	if len(text) > MaxPromptBytes {
		return AgentState{Status: StatusUnknown}, fmt.Errorf("herdr %s: %w: a prompt of %d bytes (at most %d; pass long text through the channel)", command, ErrSecretOnArgv, len(text), MaxPromptBytes)
	}
	res, err := c.run(ctx, command, c.timeout(func(t Timeouts) time.Duration { return t.Prompt }),
		[]string{"agent", "prompt", h.Agent, text})
	if err != nil {
		return AgentState{Status: StatusUnknown}, err
	}
	var prompted struct {
		Type  string     `json:"type"`
		Agent *agentInfo `json:"agent"`
	}
	if err := decodeResult(res.Stdout, &prompted); err != nil {
		return AgentState{Status: StatusUnknown}, fmt.Errorf("herdr %s: %w", command, err)
	}
	if prompted.Type != "agent_prompted" || prompted.Agent == nil {
		return AgentState{Status: StatusUnknown}, fmt.Errorf("herdr %s: unexpected response %q", command, excerpt(res.Stdout))
	}
	st, _ := mapStatus(prompted.Agent.AgentStatus)
	return AgentState{Status: st, Seq: prompted.Agent.StateChangeSeq}, nil
}

// agentInfo is the part of Herdr's AgentInfo the adapter reads.
type agentInfo struct {
	PaneID         string `json:"pane_id"`
	TabID          string `json:"tab_id"`
	AgentStatus    string `json:"agent_status"`
	StateChangeSeq int64  `json:"state_change_seq"`
}

// mapStatus turns Herdr's agent_status into a Status; "done" is idle in a
// tab nobody has looked at yet.
func mapStatus(s string) (Status, bool) {
	switch s {
	case "working":
		return StatusWorking, true
	case "blocked":
		return StatusBlocked, true
	case "idle", "done":
		return StatusIdle, true
	default:
		return StatusUnknown, false
	}
}

// Status runs `herdr agent get PANE`; see State.
func (c *CLI) Status(ctx context.Context, h Handle) (Status, error) {
	st, err := c.State(ctx, h)
	return st.Status, err
}

// State runs `herdr agent get PANE`. The answer counts only if it is about
// the same pane (and tab, when known); Herdr's "done" is idle.
func (c *CLI) State(ctx context.Context, h Handle) (AgentState, error) {
	const command = "agent get"
	unknown := AgentState{Status: StatusUnknown}
	if h.PaneID == "" {
		return unknown, fmt.Errorf("herdr %s: no pane", command)
	}
	res, err := c.run(ctx, command, c.timeout(func(t Timeouts) time.Duration { return t.Status }),
		[]string{"agent", "get", h.PaneID})
	if err != nil {
		return unknown, err
	}
	var info struct {
		Agent *agentInfo `json:"agent"`
	}
	if err := decodeResult(res.Stdout, &info); err != nil {
		return unknown, fmt.Errorf("herdr %s: %w", command, err)
	}
	switch {
	case info.Agent == nil:
		return unknown, fmt.Errorf("herdr %s: response has no agent: %q", command, excerpt(res.Stdout))
	case info.Agent.PaneID != h.PaneID:
		return unknown, fmt.Errorf("herdr %s: answered for pane %q, not %s", command, info.Agent.PaneID, h.PaneID)
	case h.TabID != "" && info.Agent.TabID != h.TabID:
		return unknown, fmt.Errorf("herdr %s: pane %s is in tab %q, not %s", command, h.PaneID, info.Agent.TabID, h.TabID)
	}
	st, ok := mapStatus(info.Agent.AgentStatus)
	if !ok {
		return unknown, fmt.Errorf("herdr %s: agent status %q", command, info.Agent.AgentStatus)
	}
	return AgentState{Status: st, Seq: info.Agent.StateChangeSeq}, nil
}

// Owned runs `herdr pane get PANE` and compares the answer with what the
// launch recorded: same server and session, same tab, and the same
// terminal (or, for a handle without one, our facets_run_id token).
func (c *CLI) Owned(ctx context.Context, h Handle, runID string) (Existence, error) {
	const command = "pane get"
	if h.PaneID == "" || h.TabID == "" {
		return TabUncertain, fmt.Errorf("herdr %s: the run has no recorded tab and pane", command)
	}
	// The socket names the server (a named session has its own socket).
	// From outside any Herdr pane the server herdr would reach is a guess,
	// so nothing is concluded; from another server the pane is not there.
	if h.Socket != "" {
		switch cur := c.getenv(envvar.HerdrSocketPath); {
		case cur == "":
			return TabUncertain, fmt.Errorf("herdr %s: tab %s belongs to the Herdr server at %s; run this from a pane of that server", command, h.TabID, h.Socket)
		case cur != h.Socket:
			return TabGone, nil
		}
	}
	var info struct {
		Pane *struct {
			PaneID     string            `json:"pane_id"`
			TerminalID string            `json:"terminal_id"`
			TabID      string            `json:"tab_id"`
			Tokens     map[string]string `json:"tokens"`
		} `json:"pane"`
	}
	stdout, ex, err := c.get(ctx, command, "pane_not_found", &info, "pane", "get", h.PaneID)
	if ex != TabPresent || err != nil {
		return ex, err
	}
	p := info.Pane
	switch {
	case p == nil || p.PaneID != h.PaneID:
		return TabUncertain, fmt.Errorf("herdr %s: response is not about pane %s: %q", command, h.PaneID, excerpt(stdout))
	case p.TabID != h.TabID:
		return TabGone, nil
	case h.TerminalID != "":
		if p.TerminalID != h.TerminalID {
			return TabGone, nil
		}
	case runID == "" || p.Tokens["facets_run_id"] != runID:
		return TabGone, nil
	}
	return TabPresent, nil
}

// TabExists runs `herdr tab get TAB`: present when herdr describes that tab,
// gone only on herdr's tab_not_found, uncertain on anything else.
func (c *CLI) TabExists(ctx context.Context, tabID string) (Existence, error) {
	const command = "tab get"
	if tabID == "" {
		return TabUncertain, fmt.Errorf("herdr %s: no tab", command)
	}
	var info struct {
		Tab *struct {
			TabID string `json:"tab_id"`
		} `json:"tab"`
	}
	stdout, ex, err := c.get(ctx, command, "tab_not_found", &info, "tab", "get", tabID)
	if ex != TabPresent || err != nil {
		return ex, err
	}
	if info.Tab == nil || info.Tab.TabID != tabID {
		return TabUncertain, fmt.Errorf("herdr %s: response is not about tab %s: %q", command, tabID, excerpt(stdout))
	}
	return TabPresent, nil
}

// get runs one `herdr … get` of an existence check and decodes its answer
// into v: gone only on herdr's notFound code, uncertain on any other failure,
// otherwise present, with the raw answer for the caller's own checks.
func (c *CLI) get(ctx context.Context, command, notFound string, v any, args ...string) ([]byte, Existence, error) {
	res, err := c.run(ctx, command, c.timeout(func(t Timeouts) time.Duration { return t.Exists }), args)
	if hasCode(err, notFound) {
		return nil, TabGone, nil
	}
	if err != nil {
		return nil, TabUncertain, err
	}
	if err := decodeResult(res.Stdout, v); err != nil {
		return nil, TabUncertain, fmt.Errorf("herdr %s: %w", command, err)
	}
	return res.Stdout, TabPresent, nil
}

// CloseTab runs `herdr tab close TAB`. Herdr never reuses tab IDs, so its
// tab_not_found means the tab is already closed, which is success.
func (c *CLI) CloseTab(ctx context.Context, h Handle) error {
	const command = "tab close"
	if h.TabID == "" {
		return nil
	}
	_, err := c.run(ctx, command, c.timeout(func(t Timeouts) time.Duration { return t.Close }),
		[]string{"tab", "close", h.TabID})
	if hasCode(err, "tab_not_found") {
		return nil
	}
	return err
}

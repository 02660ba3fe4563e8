// Command fakeherdr is a stand-in for the herdr executable in tests. It
// follows the command-line contract of Herdr 0.8.2 described in
// herdr/README.md for the commands Facets uses, keeps its state in the
// directory named by FAKEHERDR_STATE, appends every call to calls.jsonl there,
// and reads failure knobs from control.json in the same directory.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
)

const (
	defaultVersion = "0.8.2"
	protocol       = 20
)

// control is the test's script for this fake, read from control.json.
type control struct {
	// Version printed by --version and reported by status server.
	Version string `json:"version,omitempty"`
	// Server is "running" (default), "not_running" or "incompatible".
	Server string `json:"server,omitempty"`
	// Fail makes a command ("tab create", "agent start", ...) fail.
	Fail map[string]failure `json:"fail,omitempty"`
	// Hang makes a command block until killed, after writing the marker
	// file hanging-<command with _ for spaces>.
	Hang []string `json:"hang,omitempty"`
	// Malformed makes a command succeed but print a broken response:
	// "garbage", "empty", "truncated", "no-tab-id", "no-pane-id",
	// "wrong-pane", "wrong-tab".
	Malformed map[string]string `json:"malformed,omitempty"`
	// AgentStatus, when set, is what agent get reports for every agent.
	AgentStatus string `json:"agent_status,omitempty"`
}

// failure is one injected error.
type failure struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Exit defaults to 1 (a server error envelope on stderr); 2 prints the
	// message as usage text instead.
	Exit int `json:"exit,omitempty"`
	// AfterEffect performs the command and prints its result before
	// failing, like a herdr that did the work but then lost the reply.
	AfterEffect bool `json:"after_effect,omitempty"`
}

type state struct {
	Workspaces   map[string]*workspace `json:"workspaces"`
	Tabs         map[string]*tab       `json:"tabs"`
	Panes        map[string]*pane      `json:"panes"`
	NextTerminal int                   `json:"next_terminal"`
}

type workspace struct {
	ID       string `json:"id"`
	NextTab  int    `json:"next_tab"`
	NextPane int    `json:"next_pane"`
}

type tab struct {
	ID          string            `json:"id"`
	WorkspaceID string            `json:"workspace_id"`
	Number      int               `json:"number"`
	Label       string            `json:"label"`
	Focused     bool              `json:"focused"`
	Panes       []string          `json:"panes"`
	Env         map[string]string `json:"env,omitempty"`
}

type pane struct {
	ID          string            `json:"id"`
	TerminalID  string            `json:"terminal_id"`
	WorkspaceID string            `json:"workspace_id"`
	TabID       string            `json:"tab_id"`
	Cwd         string            `json:"cwd,omitempty"`
	Tokens      map[string]string `json:"tokens,omitempty"`
	Source      string            `json:"metadata_source,omitempty"`
	Agent       *agent            `json:"agent,omitempty"`
}

type agent struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Status  string   `json:"status"`
	Args    []string `json:"args,omitempty"`
	Prompts []string `json:"prompts,omitempty"`
	Seq     int      `json:"seq"`
}

// cliError is how a command fails: a usage error (exit 2, plain text) or a
// server error envelope (exit 1, JSON on stderr).
type cliError struct {
	exit    int
	code    string
	message string
}

func usage(format string, args ...any) *cliError {
	return &cliError{exit: 2, message: fmt.Sprintf(format, args...)}
}

func serverErr(code, format string, args ...any) *cliError {
	return &cliError{exit: 1, code: code, message: fmt.Sprintf(format, args...)}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	dir := os.Getenv("FAKEHERDR_STATE")
	if dir == "" {
		fmt.Fprintln(stderr, "fakeherdr: FAKEHERDR_STATE is not set")
		return 70
	}
	if err := logCall(dir, args); err != nil {
		fmt.Fprintln(stderr, "fakeherdr:", err)
		return 70
	}
	ctl, err := readControl(dir)
	if err != nil {
		fmt.Fprintln(stderr, "fakeherdr:", err)
		return 70
	}
	command := commandName(args)
	for _, h := range ctl.Hang {
		if h == command {
			marker := filepath.Join(dir, "hanging-"+strings.ReplaceAll(command, " ", "_"))
			_ = os.WriteFile(marker, nil, 0o600)
			for {
				time.Sleep(time.Hour)
			}
		}
	}

	unlock, err := lock(dir)
	if err != nil {
		fmt.Fprintln(stderr, "fakeherdr:", err)
		return 70
	}
	defer unlock()
	st, err := loadState(dir)
	if err != nil {
		fmt.Fprintln(stderr, "fakeherdr:", err)
		return 70
	}

	id := cliID(args)
	f, failing := ctl.Fail[command]
	var out any
	var cerr *cliError
	if failing && !f.AfterEffect {
		cerr = injected(f)
	} else {
		out, cerr = dispatch(args, st, ctl)
		if cerr == nil {
			if err := saveState(dir, st); err != nil {
				fmt.Fprintln(stderr, "fakeherdr:", err)
				return 70
			}
		}
		if failing && cerr == nil {
			writeOutput(stdout, id, out, ctl.Malformed[command])
			out, cerr = nil, injected(f)
		}
	}
	if cerr != nil {
		if cerr.exit == 2 {
			fmt.Fprintln(stderr, cerr.message)
			return 2
		}
		type errorBody struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		line, _ := json.Marshal(struct {
			ID    string    `json:"id"`
			Error errorBody `json:"error"`
		}{id, errorBody{cerr.code, cerr.message}})
		fmt.Fprintln(stderr, string(line))
		return cerr.exit
	}
	writeOutput(stdout, id, out, ctl.Malformed[command])
	return 0
}

func injected(f failure) *cliError {
	exit := f.Exit
	if exit == 0 {
		exit = 1
	}
	code := f.Code
	if code == "" {
		code = "injected_failure"
	}
	msg := f.Message
	if msg == "" {
		msg = "injected failure"
	}
	return &cliError{exit: exit, code: code, message: msg}
}

// commandName is the knob key for args: "tab create", "status server",
// "--version".
func commandName(args []string) string {
	if len(args) == 0 {
		return ""
	}
	if strings.HasPrefix(args[0], "-") || len(args) == 1 {
		return args[0]
	}
	return args[0] + " " + args[1]
}

// cliID is the id herdr prints in its envelopes, "cli:<group>:<command>".
func cliID(args []string) string {
	if len(args) < 2 {
		return "cli:request"
	}
	return "cli:" + args[0] + ":" + args[1]
}

// writeOutput prints the success output: raw strings as they are, values as
// one compact {"id","result"} line, optionally broken as the control asks.
func writeOutput(w io.Writer, id string, out any, malformed string) {
	if out == nil {
		return
	}
	var line []byte
	switch v := out.(type) {
	case rawText:
		line = []byte(v)
	case plainJSON:
		line, _ = json.Marshal(v.value)
		line = append(line, '\n')
	default:
		line, _ = json.Marshal(struct {
			ID     string `json:"id"`
			Result any    `json:"result"`
		}{id, out})
		line = append(line, '\n')
	}
	switch malformed {
	case "":
	case "garbage":
		line = []byte("herdr: \xff\xfe not json {\n")
	case "empty":
		line = nil
	case "truncated":
		line = line[:len(line)/2]
	default:
		line = mutate(line, malformed)
	}
	_, _ = w.Write(line)
}

// mutate removes or changes one field of a JSON envelope.
func mutate(line []byte, how string) []byte {
	var env map[string]any
	if err := json.Unmarshal(line, &env); err != nil {
		return line
	}
	res, _ := env["result"].(map[string]any)
	if res == nil {
		return line
	}
	switch how {
	case "no-tab-id":
		delete(res, "tab")
	case "no-pane-id":
		delete(res, "root_pane")
	case "wrong-pane":
		if a, ok := res["agent"].(map[string]any); ok {
			a["pane_id"] = "w9:p99"
		}
	case "wrong-tab":
		if a, ok := res["agent"].(map[string]any); ok {
			a["tab_id"] = "w9:t99"
		}
		if t, ok := res["tab"].(map[string]any); ok {
			t["tab_id"] = "w9:t99"
		}
	}
	out, _ := json.Marshal(env)
	return append(out, '\n')
}

// rawText is output printed verbatim (herdr --version, text status).
type rawText string

// plainJSON is output printed as JSON without the {"id","result"} envelope
// (status server --json).
type plainJSON struct{ value any }

func dispatch(args []string, st *state, ctl control) (any, *cliError) {
	if len(args) == 0 {
		return nil, usage("fakeherdr: starting the TUI is not supported")
	}
	version := ctl.Version
	if version == "" {
		version = defaultVersion
	}
	switch args[0] {
	case "--version", "-V":
		return rawText("herdr " + version + "\n"), nil
	case "status":
		return statusCommand(args[1:], ctl, version)
	case "tab", "agent", "pane":
	default:
		return nil, usage("unknown command: %s\nrun 'herdr --help' for usage", args[0])
	}
	if len(args) < 2 {
		return nil, usage("herdr %s commands: ...", args[0])
	}
	switch ctl.Server {
	case "not_running":
		return nil, serverErr("server_not_running", "no herdr server is running at %s; run `herdr` to start or attach it", socketPath())
	case "incompatible":
		return nil, serverErr("protocol_mismatch", "herdr server protocol %d does not match client protocol %d", protocol-1, protocol)
	}
	rest := args[2:]
	switch args[0] + " " + args[1] {
	case "tab create":
		return tabCreate(rest, st)
	case "tab get":
		return tabGet(rest, st)
	case "tab close":
		return tabClose(rest, st)
	case "agent start":
		return agentStart(rest, st)
	case "agent prompt":
		return agentPrompt(rest, st)
	case "agent get":
		return agentGet(rest, st, ctl)
	case "pane report-metadata":
		return paneReportMetadata(rest, st)
	}
	return nil, usage("unknown %s command: %s", args[0], args[1])
}

func socketPath() string {
	if p := os.Getenv("HERDR_SOCKET_PATH"); p != "" {
		return p
	}
	return filepath.Join(os.Getenv("FAKEHERDR_STATE"), "herdr.sock")
}

func statusCommand(args []string, ctl control, version string) (any, *cliError) {
	if len(args) == 0 || args[0] != "server" {
		return nil, usage("herdr status commands:\n  herdr status server [--json]  show running server status")
	}
	asJSON := false
	switch {
	case len(args) == 1:
	case len(args) == 2 && args[1] == "--json":
		asJSON = true
	default:
		return nil, usage("usage: herdr status server [--json]")
	}
	running := ctl.Server != "not_running"
	compatible := ctl.Server != "incompatible"
	// Field order and names follow herdr's ServerStatusJson.
	type status struct {
		Status        string  `json:"status"`
		Running       bool    `json:"running"`
		Version       *string `json:"version"`
		Protocol      *int    `json:"protocol"`
		Capabilities  any     `json:"capabilities"`
		Compatible    *bool   `json:"compatible"`
		Socket        string  `json:"socket"`
		Session       *string `json:"session"`
		RestartNeeded *bool   `json:"restart_needed"`
	}
	s := status{Status: "not_running", Socket: socketPath()}
	no := false
	s.RestartNeeded = &no
	if running {
		p := protocol
		if !compatible {
			p = protocol - 1
		}
		s.Status, s.Running, s.Version, s.Protocol, s.Compatible = "running", true, &version, &p, &compatible
		s.Capabilities = map[string]any{"live_handoff": true, "detached_server_daemon": true}
	}
	if asJSON {
		return plainJSON{s}, nil
	}
	if !running {
		return rawText("status: not running\nsocket: " + s.Socket + "\n"), nil
	}
	compat := "yes"
	if !compatible {
		compat = "no"
	}
	return rawText(fmt.Sprintf("status: running\nversion: %s\nprotocol: %d\ncompatible: %s\nsocket: %s\n",
		version, *s.Protocol, compat, s.Socket)), nil
}

// flagValue takes the value of the flag at args[i].
func flagValue(args []string, i int) (string, *cliError) {
	if i+1 >= len(args) {
		return "", usage("missing value for %s", args[i])
	}
	return args[i+1], nil
}

func tabCreate(args []string, st *state) (any, *cliError) {
	var wsID, cwd, label string
	env := map[string]string{}
	focus := false
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--workspace", "--cwd", "--label", "--env":
			v, err := flagValue(args, i)
			if err != nil {
				return nil, err
			}
			switch args[i] {
			case "--workspace":
				wsID = v
			case "--cwd":
				cwd = v
			case "--label":
				label = v
			case "--env":
				k, val, ok := strings.Cut(v, "=")
				if !ok {
					return nil, usage("env must use KEY=VALUE")
				}
				if k == "" {
					return nil, usage("env key must not be empty")
				}
				env[k] = val
			}
			i++
		case "--focus":
			focus = true
		case "--no-focus":
			focus = false
		default:
			return nil, usage("unknown option: %s", args[i])
		}
	}
	if wsID == "" {
		wsID = "w1"
	}
	ws := st.Workspaces[wsID]
	if ws == nil {
		return nil, serverErr("workspace_not_found", "workspace %s not found", wsID)
	}
	t := &tab{ID: fmt.Sprintf("%s:t%d", wsID, ws.NextTab), WorkspaceID: wsID, Number: ws.NextTab, Label: label, Focused: focus, Env: env}
	ws.NextTab++
	p := newPane(st, ws, t.ID, cwd)
	t.Panes = []string{p.ID}
	if t.Label == "" {
		t.Label = strconv.Itoa(t.Number)
	}
	st.Tabs[t.ID] = t
	return struct {
		Type     string   `json:"type"`
		Tab      tabInfo  `json:"tab"`
		RootPane paneInfo `json:"root_pane"`
	}{"tab_created", infoOfTab(st, t), infoOfPane(p)}, nil
}

func newPane(st *state, ws *workspace, tabID, cwd string) *pane {
	st.NextTerminal++
	p := &pane{ID: fmt.Sprintf("%s:p%d", ws.ID, ws.NextPane), TerminalID: fmt.Sprintf("term_%08x", st.NextTerminal),
		WorkspaceID: ws.ID, TabID: tabID, Cwd: cwd}
	ws.NextPane++
	st.Panes[p.ID] = p
	return p
}

// tabInfo follows herdr's TabInfo field order.
type tabInfo struct {
	TabID       string `json:"tab_id"`
	WorkspaceID string `json:"workspace_id"`
	Number      int    `json:"number"`
	Label       string `json:"label"`
	Focused     bool   `json:"focused"`
	PaneCount   int    `json:"pane_count"`
	AgentStatus string `json:"agent_status"`
}

func infoOfTab(st *state, t *tab) tabInfo {
	status := "unknown"
	for _, id := range t.Panes {
		if p := st.Panes[id]; p != nil && p.Agent != nil {
			status = p.Agent.Status
		}
	}
	return tabInfo{t.ID, t.WorkspaceID, t.Number, t.Label, t.Focused, len(t.Panes), status}
}

// paneInfo follows herdr's PaneInfo field order (optional fields omitted).
type paneInfo struct {
	PaneID      string `json:"pane_id"`
	TerminalID  string `json:"terminal_id"`
	WorkspaceID string `json:"workspace_id"`
	TabID       string `json:"tab_id"`
	Focused     bool   `json:"focused"`
	Cwd         string `json:"cwd,omitempty"`
	Agent       string `json:"agent,omitempty"`
	AgentStatus string `json:"agent_status"`
	Revision    int    `json:"revision"`
}

func infoOfPane(p *pane) paneInfo {
	info := paneInfo{PaneID: p.ID, TerminalID: p.TerminalID, WorkspaceID: p.WorkspaceID, TabID: p.TabID, Cwd: p.Cwd, AgentStatus: "unknown"}
	if p.Agent != nil {
		info.Agent, info.AgentStatus = p.Agent.Kind, p.Agent.Status
	}
	return info
}

func oneArg(args []string, what string) (string, *cliError) {
	if len(args) != 1 {
		return "", usage("usage: herdr %s", what)
	}
	return args[0], nil
}

func tabGet(args []string, st *state) (any, *cliError) {
	id, cerr := oneArg(args, "tab get <tab_id>")
	if cerr != nil {
		return nil, cerr
	}
	t := st.Tabs[id]
	if t == nil {
		return nil, serverErr("tab_not_found", "tab %s not found", id)
	}
	return struct {
		Type string  `json:"type"`
		Tab  tabInfo `json:"tab"`
	}{"tab_info", infoOfTab(st, t)}, nil
}

func tabClose(args []string, st *state) (any, *cliError) {
	id, cerr := oneArg(args, "tab close <tab_id>")
	if cerr != nil {
		return nil, cerr
	}
	t := st.Tabs[id]
	if t == nil {
		return nil, serverErr("tab_not_found", "tab %s not found", id)
	}
	for _, p := range t.Panes {
		endPaneProcess(p)
		delete(st.Panes, p)
	}
	delete(st.Tabs, id)
	last := true
	for _, other := range st.Tabs {
		if other.WorkspaceID == t.WorkspaceID {
			last = false
		}
	}
	if last {
		delete(st.Workspaces, t.WorkspaceID) // closing the last tab closes its workspace
	}
	return struct {
		Type string `json:"type"`
	}{"ok"}, nil
}

// endPaneProcess ends the process a test runs as the pane's program, as
// Herdr ends a closed pane's session: SIGHUP, then SIGTERM, then SIGKILL,
// each after 250 ms. The fake starts no programs, so a test that plays a
// pane writes the process id (the leader of its own process group) to
// pane-<id>.pid in the state directory.
func endPaneProcess(paneID string) {
	file := filepath.Join(os.Getenv("FAKEHERDR_STATE"), "pane-"+paneID+".pid")
	data, err := os.ReadFile(file)
	if err != nil {
		return
	}
	os.Remove(file)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGKILL} {
		if syscall.Kill(-pid, sig) != nil {
			return // the group is gone
		}
		for deadline := time.Now().Add(250 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if syscall.Kill(-pid, 0) != nil {
				return
			}
		}
	}
}

// knownAgentKind reports whether herdr has an integration for kind.
func knownAgentKind(kind string) bool {
	switch kind {
	case "pi", "claude", "codex", "gemini", "cursor", "devin", "agy", "cline", "omp", "mastracode", "opencode",
		"copilot", "kimi", "kiro", "droid", "amp", "grok", "hermes", "kilo", "qodercli", "qwen", "maki":
		return true
	}
	return false
}

func agentStart(args []string, st *state) (any, *cliError) {
	var name, kind, paneID string
	timeout := 30000
	var agentArgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			agentArgs = append([]string{}, args[i+1:]...)
			i = len(args)
		case a == "--kind" || a == "--pane" || a == "--timeout":
			v, cerr := flagValue(args, i)
			if cerr != nil {
				return nil, cerr
			}
			switch a {
			case "--kind":
				kind = v
			case "--pane":
				paneID = v
			case "--timeout":
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, usage("invalid --timeout value: %s", v)
				}
				timeout = n
			}
			i++
		case strings.HasPrefix(a, "-"):
			return nil, usage("unknown option: %s", a)
		case name == "":
			name = a
		default:
			return nil, usage("unexpected argument: %s", a)
		}
	}
	switch {
	case name == "":
		return nil, usage("usage: herdr agent start <name> --kind <kind> --pane <pane_id> [--timeout MS] [-- args...]")
	case kind == "":
		return nil, usage("missing required --kind")
	case paneID == "":
		return nil, usage("missing required --pane")
	case !knownAgentKind(kind):
		return nil, usage("unsupported interactive agent kind: %s", kind)
	case !regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`).MatchString(name):
		return nil, serverErr("invalid_agent_name", "invalid agent name %q", name)
	case timeout <= 3000 || timeout > 300000:
		return nil, serverErr("invalid_agent_timeout", "agent start timeout must be greater than 3000 and at most 300000 ms")
	}
	for _, a := range agentArgs {
		if strings.IndexFunc(a, unicode.IsControl) >= 0 {
			return nil, serverErr("invalid_agent_argument", "agent arguments must not contain control characters")
		}
	}
	p := st.Panes[paneID]
	if p == nil {
		return nil, serverErr("agent_pane_not_found", "pane %s not found", paneID)
	}
	if p.Agent != nil {
		return nil, serverErr("agent_pane_busy", "pane %s is not at an idle shell prompt", paneID)
	}
	if findAgent(st, name) != nil {
		return nil, serverErr("agent_name_taken", "agent name %s is already in use", name)
	}
	if kind != "pi" {
		return nil, serverErr("agent_start_failed", "fakeherdr only runs pi")
	}
	p.Agent = &agent{Name: name, Kind: kind, Status: "idle", Args: agentArgs, Seq: 1}
	return struct {
		Type  string    `json:"type"`
		Agent agentInfo `json:"agent"`
		Argv  []string  `json:"argv"`
	}{"agent_started", infoOfAgent(p, ""), append([]string{"pi"}, agentArgs...)}, nil
}

func findAgent(st *state, target string) *pane {
	if p := st.Panes[target]; p != nil && p.Agent != nil {
		return p
	}
	for _, id := range sortedKeys(st.Panes) {
		if p := st.Panes[id]; p.Agent != nil && p.Agent.Name == target {
			return p
		}
	}
	return nil
}

// agentInfo follows herdr's AgentInfo field order (optional fields omitted).
type agentInfo struct {
	TerminalID       string            `json:"terminal_id"`
	Name             string            `json:"name,omitempty"`
	Agent            string            `json:"agent,omitempty"`
	AgentStatus      string            `json:"agent_status"`
	ScreenSkipped    bool              `json:"screen_detection_skipped,omitempty"`
	Tokens           map[string]string `json:"tokens,omitempty"`
	WorkspaceID      string            `json:"workspace_id"`
	TabID            string            `json:"tab_id"`
	PaneID           string            `json:"pane_id"`
	Focused          bool              `json:"focused"`
	InteractiveReady bool              `json:"interactive_ready,omitempty"`
	StateChangeSeq   int               `json:"state_change_seq"`
	Cwd              string            `json:"cwd,omitempty"`
	Revision         int               `json:"revision"`
}

func infoOfAgent(p *pane, statusOverride string) agentInfo {
	status := p.Agent.Status
	if statusOverride != "" {
		status = statusOverride
	}
	return agentInfo{TerminalID: p.TerminalID, Name: p.Agent.Name, Agent: p.Agent.Kind, AgentStatus: status,
		Tokens: p.Tokens, WorkspaceID: p.WorkspaceID, TabID: p.TabID, PaneID: p.ID,
		InteractiveReady: true, StateChangeSeq: p.Agent.Seq, Cwd: p.Cwd, Revision: p.Agent.Seq}
}

func agentPrompt(args []string, st *state) (any, *cliError) {
	if len(args) < 2 {
		return nil, usage("usage: herdr agent prompt <target> <text> [--wait] [--until STATUS]... [--timeout MS]")
	}
	target, text := args[0], args[1]
	wait, untilOrTimeout := false, false
	for i := 2; i < len(args); i++ {
		switch args[i] {
		case "--wait":
			wait = true
		case "--until", "--timeout":
			if _, cerr := flagValue(args, i); cerr != nil {
				return nil, cerr
			}
			untilOrTimeout = true
			i++
		default:
			return nil, usage("unknown option: %s", args[i])
		}
	}
	if untilOrTimeout && !wait {
		return nil, usage("--until and --timeout require --wait")
	}
	if strings.TrimSpace(text) == "" {
		return nil, serverErr("empty_agent_prompt", "prompt text must not be empty")
	}
	p := findAgent(st, target)
	if p == nil {
		return nil, serverErr("agent_not_found", "agent %s not found", target)
	}
	if p.Agent.Status == "blocked" {
		return nil, serverErr("agent_blocked", "agent %s is blocked; no input sent", target)
	}
	p.Agent.Prompts = append(p.Agent.Prompts, text)
	p.Agent.Seq++
	p.Agent.Status = "working"
	if wait {
		p.Agent.Seq++
		p.Agent.Status = "idle"
	}
	return struct {
		Type  string    `json:"type"`
		Agent agentInfo `json:"agent"`
	}{"agent_prompted", infoOfAgent(p, "")}, nil
}

func agentGet(args []string, st *state, ctl control) (any, *cliError) {
	target, cerr := oneArg(args, "agent get <target>")
	if cerr != nil {
		return nil, cerr
	}
	p := findAgent(st, target)
	if p == nil {
		return nil, serverErr("agent_not_found", "agent %s not found", target)
	}
	return struct {
		Type  string    `json:"type"`
		Agent agentInfo `json:"agent"`
	}{"agent_info", infoOfAgent(p, ctl.AgentStatus)}, nil
}

func paneReportMetadata(args []string, st *state) (any, *cliError) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, usage("usage: herdr pane report-metadata <pane_id> --source ID [--token NAME=VALUE]...")
	}
	paneID, source := args[0], ""
	tokens := map[string]string{}
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "--source", "--token", "--display-agent", "--title", "--state-label", "--ttl-ms":
			v, cerr := flagValue(args, i)
			if cerr != nil {
				return nil, cerr
			}
			switch args[i] {
			case "--source":
				source = v
			case "--token":
				k, val, ok := strings.Cut(v, "=")
				if !ok {
					return nil, usage("token must use NAME=VALUE")
				}
				if k == "" {
					return nil, usage("token name must not be empty")
				}
				tokens[k] = val
			}
			i++
		default:
			return nil, usage("unknown option: %s", args[i])
		}
	}
	if source == "" {
		return nil, usage("missing required --source")
	}
	p := st.Panes[paneID]
	if p == nil {
		return nil, serverErr("pane_not_found", "pane %s not found", paneID)
	}
	p.Source, p.Tokens = source, tokens
	return nil, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// callRecord is one line of calls.jsonl.
type callRecord struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
}

// logCall records argv and the environment variables that matter to the
// contract: Herdr's own and any PI_FACETS_* that leaked into herdr's env.
func logCall(dir string, args []string) error {
	rec := callRecord{Argv: append([]string{}, args...), Env: map[string]string{}}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HERDR_") || strings.HasPrefix(k, "PI_FACETS_") {
			rec.Env[k] = v
		}
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "calls.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readControl(dir string) (control, error) {
	var ctl control
	data, err := os.ReadFile(filepath.Join(dir, "control.json"))
	if errors.Is(err, os.ErrNotExist) {
		return ctl, nil
	}
	if err != nil {
		return ctl, err
	}
	// herdrtest.Control mirrors control; an unknown knob means the mirror
	// drifted, which must fail rather than be silently ignored.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ctl); err != nil {
		return ctl, fmt.Errorf("control.json: %w", err)
	}
	return ctl, nil
}

// lock serializes concurrent fake invocations on the state file.
func lock(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "state.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// loadState reads state.json, starting from one workspace w1 whose tab
// w1:t1 holds pane w1:p1 (the Main Pi's pane).
func loadState(dir string) (*state, error) {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		st := &state{Workspaces: map[string]*workspace{}, Tabs: map[string]*tab{}, Panes: map[string]*pane{}}
		ws := &workspace{ID: "w1", NextTab: 1, NextPane: 1}
		st.Workspaces[ws.ID] = ws
		t := &tab{ID: "w1:t1", WorkspaceID: "w1", Number: 1, Label: "main", Focused: true}
		ws.NextTab++
		p := newPane(st, ws, t.ID, "")
		t.Panes = []string{p.ID}
		st.Tabs[t.ID] = t
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("state.json: %w", err)
	}
	if st.Workspaces == nil {
		st.Workspaces = map[string]*workspace{}
	}
	if st.Tabs == nil {
		st.Tabs = map[string]*tab{}
	}
	if st.Panes == nil {
		st.Panes = map[string]*pane{}
	}
	return &st, nil
}

func saveState(dir string, st *state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "state.json"))
}

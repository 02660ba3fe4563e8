// Package fakeherdr is a stand-in for the herdr executable in tests: Main is
// its whole command line. internal/herdrtest runs it as "herdr" by
// re-executing the test binary, so the fake is linked into every test that
// uses it and a change to the fake is a change to that test's inputs (go
// test's cache cannot serve a stale result). It follows the command-line contract of Herdr 0.8.2, or of the
// 0.9 line when a test asks for it, described in herdr/README.md for the commands Facets uses, keeps its state in the
// directory named by FAKEHERDR_STATE, appends every call to calls.jsonl there,
// and reads failure knobs from control.json (internal/fakectl) in the same
// directory.
package fakeherdr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/fakectl"
)

// The Herdr releases the fake answers as, chosen per test by the version
// knob: Version082 (the default) follows herdrdev/herdr at 1c76079f, the
// 0.8.2 line, and Version09, or any newer version, follows the 0.9 line
// (wire protocol 22) as herdr/README.md describes.
const (
	Version082 = "0.8.2"
	Version09  = "0.9.3"
)

// lineProtocol is the wire protocol of version's release line: 20 up to
// 0.8, 22 from 0.9 (src/protocol/wire.rs PROTOCOL_VERSION in each line).
func lineProtocol(version string) int {
	major, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	if major == "0" {
		if n, err := strconv.Atoi(minor); err == nil && n <= 8 {
			return 20
		}
	}
	return 22
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

// Main runs one herdr command line (args without the program name) and
// returns its exit status.
func Main(args []string, stdout, stderr io.Writer) int {
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
	if len(args) > 0 && args[0] == "server" {
		return serverCommand(dir, args[1:], stderr)
	}
	for _, h := range ctl.Hang {
		if h == command {
			marker := filepath.Join(dir, "hanging-"+strings.ReplaceAll(command, " ", "_"))
			_ = os.WriteFile(marker, nil, 0o600)
			for {
				time.Sleep(time.Hour)
			}
		}
	}

	id := cliID(args)
	f, failing := ctl.Fail[command]
	var out any
	var cerr *cliError
	if failing && !f.AfterEffect {
		cerr = injected(f)
	} else {
		err := withState(dir, ctl, func(st *fakectl.State) error {
			out, cerr = dispatch(args, st, ctl)
			return nil
		})
		if err != nil {
			fmt.Fprintln(stderr, "fakeherdr:", err)
			return 70
		}
		// agent start answers only once the agent is ready, polling
		// without holding the state lock, as herdr's CLI does.
		if w, ok := out.(startWait); ok {
			out, cerr, err = w.wait(dir, ctl)
			if err != nil {
				fmt.Fprintln(stderr, "fakeherdr:", err)
				return 70
			}
		}
		if failing && cerr == nil {
			writeOutput(stdout, id, out, ctl.Malformed[command], ctl.ExtraFields)
			out, cerr = nil, injected(f)
		}
	}
	if cerr != nil {
		if cerr.exit == 2 || cerr.code == "" {
			fmt.Fprintln(stderr, cerr.message)
			return cerr.exit
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
	writeOutput(stdout, id, out, ctl.Malformed[command], ctl.ExtraFields)
	return 0
}

// withState runs fn on the state under the state lock, after applying
// what happened since the last call, and saves it.
func withState(dir string, ctl fakectl.Control, fn func(st *fakectl.State) error) error {
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := loadState(dir)
	if err != nil {
		return err
	}
	advance(st, ctl, nowMS())
	if err := fn(st); err != nil {
		return err
	}
	return saveState(dir, st)
}

func nowMS() int64 { return time.Now().UnixMilli() }

// advance applies the timed transitions due by now: a launch that settles
// (ready, blocked on a startup dialog, or exited), a prompt's delayed Enter
// (idle → working) and the end of a turn (working → idle). Each bumps the
// agent's state_change_seq, as Herdr does on every transition.
func advance(st *fakectl.State, ctl fakectl.Control, now int64) {
	for _, id := range sortedKeys(st.Panes) {
		a := st.Panes[id].Agent
		if a == nil || a.Exited {
			continue
		}
		if a.Status == "starting" && !a.Stuck && !a.Pending(now) {
			switch ctl.Startup {
			case "blocked":
				a.Status = "blocked"
			case "exit":
				a.Exited = true
			case "pending":
				// Idle by Pi's own lifecycle report, yet Herdr never
				// clears the managed launch (issue 3853).
				a.Stuck = true
			default:
				a.Status, a.Ready = "idle", true
			}
			a.Seq++
		}
		if a.EnterAt > 0 && now >= a.EnterAt && a.Status == "blocked" {
			// Pi reported itself blocked meanwhile: the Enter does not
			// start a turn, and only Pi's next report changes its state.
			a.EnterAt = 0
		}
		if a.EnterAt > 0 && now >= a.EnterAt {
			a.Status, a.EnterAt = "working", 0
			a.Seq++
			if ctl.TurnMS > 0 {
				a.TurnEndsAt = now + int64(ctl.TurnMS)
			}
		}
		if a.TurnEndsAt > 0 && now >= a.TurnEndsAt {
			a.Status, a.TurnEndsAt = "idle", 0
			a.Seq++
		}
	}
}

func injected(f fakectl.Failure) *cliError {
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
	switch args[0] + " " + args[1] {
	case "pane report-metadata", "pane report-agent":
		// Commands that print nothing on success send their request as
		// cli:request (send_ok_request in src/cli.rs).
		return "cli:request"
	case "pane process-info":
		return "cli:pane:process_info"
	}
	return "cli:" + args[0] + ":" + args[1]
}

// writeOutput prints the success output: raw strings as they are, values as
// one compact {"id","result"} line, optionally broken as the control asks.
func writeOutput(w io.Writer, id string, out any, malformed string, extra bool) {
	if out == nil {
		return
	}
	var line []byte
	switch v := out.(type) {
	case rawText:
		line = []byte(v)
	case plainJSON:
		line, _ = json.Marshal(v.value)
		if extra {
			line, _ = json.Marshal(withExtraFields(v.value))
		}
		line = append(line, '\n')
	default:
		if extra {
			out = withExtraFields(out)
		}
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

// withExtraFields returns v as generic JSON with an unknown field added to
// every object, as a newer Herdr's answers may carry.
func withExtraFields(v any) any {
	if _, ok := v.(rawText); ok {
		return v
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var generic any
	if json.Unmarshal(data, &generic) != nil {
		return v
	}
	var add func(any)
	add = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, child := range x {
				if k != "tokens" && k != "state_labels" { // maps of strings, not records
					add(child)
				}
			}
			x["x_newer_herdr"] = map[string]any{"since": "0.9.0", "values": []any{1, "two"}}
		case []any:
			for _, child := range x {
				add(child)
			}
		}
	}
	add(generic)
	return generic
}

// rawText is output printed verbatim (herdr --version, text status).
type rawText string

// plainJSON is output printed as JSON without the {"id","result"} envelope
// (status server --json).
type plainJSON struct{ value any }

func dispatch(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	if len(args) == 0 {
		return nil, usage("fakeherdr: starting the TUI is not supported")
	}
	r := releaseOf(ctl)
	switch args[0] {
	case "--version", "-V":
		return rawText("herdr " + r.client + "\n"), nil
	case "status":
		return statusCommand(args[1:], ctl, r)
	case "tab", "agent", "pane", "workspace":
	default:
		return nil, usage("unknown command: %s\nrun 'herdr --help' for usage", args[0])
	}
	if len(args) < 2 {
		return nil, usage("herdr %s commands: ...", args[0])
	}
	switch {
	case ctl.Server == "not_running" || !serverAnswers():
		return nil, serverErr("server_not_running", "no herdr server is running at %s; run `herdr` to start or attach it", socketPath())
	case !r.compatible():
		return nil, serverErr("protocol_mismatch", "herdr server protocol %d does not match client protocol %d", r.serverProtocol, r.clientProtocol)
	}
	rest := args[2:]
	switch args[0] + " " + args[1] {
	case "tab create":
		return tabCreate(rest, st, ctl)
	case "tab get":
		return tabGet(rest, st)
	case "tab close":
		return tabClose(rest, st, ctl)
	case "agent start":
		return agentStart(rest, st, ctl)
	case "agent prompt":
		return agentPrompt(rest, st, ctl)
	case "agent get":
		return agentGet(rest, st, ctl)
	case "agent list":
		return agentList(rest, st, ctl)
	case "agent rename":
		return agentRename(rest, st)
	case "pane report-metadata":
		return paneReportMetadata(rest, st)
	case "pane report-agent":
		return paneReportAgent(rest, st)
	case "pane process-info":
		return paneProcessInfo(rest, st, ctl)
	case "workspace create":
		return workspaceCreate(rest, st, ctl)
	case "pane get":
		return paneGet(rest, st)
	case "workspace list":
		return workspaceList(rest, st)
	}
	return nil, usage("unknown %s command: %s", args[0], args[1])
}

// release is the Herdr a call plays: this herdr binary (client) and the
// server it reaches, each with its version and wire protocol.
type release struct {
	client, server                 string
	clientProtocol, serverProtocol int
}

// releaseOf reads the version knobs: version (default Version082) is the
// client's and, unless server_version names another, the server's;
// protocol overrides both protocols, and server "incompatible" makes the
// server's one lower.
func releaseOf(ctl fakectl.Control) release {
	r := release{client: ctl.Version, server: ctl.ServerVersion}
	if r.client == "" {
		r.client = Version082
	}
	if r.server == "" {
		r.server = r.client
	}
	r.clientProtocol, r.serverProtocol = lineProtocol(r.client), lineProtocol(r.server)
	if ctl.Protocol > 0 {
		r.clientProtocol, r.serverProtocol = ctl.Protocol, ctl.Protocol
	}
	if ctl.Server == "incompatible" {
		r.serverProtocol = r.clientProtocol - 1
	}
	return r
}

// compatible is herdr's protocol guard: the CLI drives only a server of its
// own wire protocol (src/cli/protocol_guard.rs in 0.8.2).
func (r release) compatible() bool { return r.clientProtocol == r.serverProtocol }

// line09 reports whether the client follows the 0.9 line.
func (r release) line09() bool { return lineProtocol(r.client) >= 22 }

// serverPIDFile marks a state directory whose server was started with
// `herdr server`; from then on the CLI answers only while that server
// listens on its socket.
const serverPIDFile = "server.pid"

// serverAnswers reports whether the server is up: always for the server
// herdr starts on its own (no `herdr server` ran), else while its socket
// accepts connections (the CLI's first step is a ping over that socket).
func serverAnswers() bool {
	if _, err := os.Stat(filepath.Join(os.Getenv("FAKEHERDR_STATE"), serverPIDFile)); err != nil {
		return true
	}
	c, err := net.Dial("unix", socketPath())
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// serverCommand is `herdr server` and `herdr server stop`. A server starts
// fresh: no workspace, unless HERDR_STARTUP_CWD names the directory of one
// (seed_startup_workspace_if_empty in src/server/headless.rs; Herdr's own
// tests/api_ping.rs workspace_list_and_create_round_trip sees zero). It
// listens on $HERDR_SOCKET_PATH until SIGTERM, SIGINT or SIGHUP, or until
// `herdr server stop`, and then removes the socket.
func serverCommand(dir string, args []string, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "stop" {
		return serverStop(dir, stderr)
	}
	if len(args) != 0 {
		fmt.Fprintf(stderr, "unknown server command: %s\n", strings.Join(args, " "))
		return 2
	}
	ctl, err := readControl(dir)
	if err != nil {
		fmt.Fprintln(stderr, "fakeherdr:", err)
		return 70
	}
	socket := socketPath()
	if c, err := net.Dial("unix", socket); err == nil {
		c.Close()
		fmt.Fprintln(stderr, "error: herdr server is already running")
		return 1
	}
	_ = os.Remove(socket) // a stale socket of a server that died
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		fmt.Fprintln(stderr, "fakeherdr:", err)
		return 70
	}
	err = withState(dir, ctl, func(st *fakectl.State) error {
		*st = fakectl.State{Workspaces: map[string]*fakectl.Workspace{}, Tabs: map[string]*fakectl.Tab{}, Panes: map[string]*fakectl.Pane{}, NextWorkspace: 1, NextTerminal: st.NextTerminal}
		if cwd := os.Getenv("HERDR_STARTUP_CWD"); cwd != "" {
			newWorkspace(st, ctl, cwd, "", true, nil)
		}
		return os.WriteFile(filepath.Join(dir, serverPIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	})
	if err != nil {
		fmt.Fprintln(stderr, "fakeherdr:", err)
		return 70
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		fmt.Fprintln(stderr, "fakeherdr:", err)
		return 70
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	<-stop
	ln.Close() // removes the socket file
	_ = os.Remove(socket)
	return 0
}

// serverStop ends the server started in dir and returns once its socket is
// gone, printing nothing (tests/cli/sessions.rs
// server_stop_command_shuts_down_running_server).
func serverStop(dir string, stderr io.Writer) int {
	data, err := os.ReadFile(filepath.Join(dir, serverPIDFile))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 || !serverAnswers() {
		fmt.Fprintf(stderr, "{\"id\":\"cli:server:stop\",\"error\":{\"code\":\"server_not_running\",\"message\":\"no herdr server is running at %s; run `herdr` to start or attach it\"}}\n", socketPath())
		return 1
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && serverAnswers(); {
		time.Sleep(10 * time.Millisecond)
	}
	return 0
}

func socketPath() string {
	if p := os.Getenv("HERDR_SOCKET_PATH"); p != "" {
		return p
	}
	return filepath.Join(os.Getenv("FAKEHERDR_STATE"), "herdr.sock")
}

func statusCommand(args []string, ctl fakectl.Control, r release) (any, *cliError) {
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
	running := ctl.Server != "not_running" && serverAnswers()
	compatible := r.compatible()
	// Field order and names follow herdr's ServerStatusJson (src/cli/status.rs
	// at 1c76079f); 0.9 adds endpoint_compatible and server_binary_stale
	// (tests/cli/sessions.rs status_commands_report_client_and_server_versions
	// of the 0.9 line). Its capabilities are not modelled: Facets does not
	// read them.
	type status struct {
		Status             string  `json:"status"`
		Running            bool    `json:"running"`
		Version            *string `json:"version"`
		Protocol           *int    `json:"protocol"`
		Capabilities       any     `json:"capabilities"`
		Compatible         *bool   `json:"compatible"`
		EndpointCompatible *bool   `json:"endpoint_compatible,omitempty"`
		Socket             string  `json:"socket"`
		Session            *string `json:"session"`
		RestartNeeded      *bool   `json:"restart_needed"`
		ServerBinaryStale  *bool   `json:"server_binary_stale,omitempty"`
	}
	s := status{Status: "not_running", Socket: socketPath()}
	no := false
	s.RestartNeeded = &no
	if r.line09() {
		s.ServerBinaryStale = &no
	}
	// A 0.9 client shows a 0.8 server as not endpoint-compatible: 0.8.2
	// has no endpoint contract (src/protocol/endpoint.rs, generation 1).
	endpoint := lineProtocol(r.server) >= 22
	if running {
		p := r.serverProtocol
		s.Status, s.Running, s.Version, s.Protocol, s.Compatible = "running", true, &r.server, &p, &compatible
		if r.line09() {
			s.EndpointCompatible = &endpoint
		} else {
			s.Capabilities = map[string]any{"live_handoff": true, "detached_server_daemon": true}
		}
	}
	if asJSON {
		return plainJSON{s}, nil
	}
	if !running {
		return rawText("status: not running\nsocket: " + s.Socket + "\n"), nil
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	if r.line09() {
		// As herdr 0.9.3 prints it: the private protocol is the one the
		// CLI's requests need.
		return rawText(fmt.Sprintf("status: running\nversion: %s\nendpoint_compatible: %s\nprivate_protocol: %d\nprivate_protocol_compatible: %s\nsocket: %s\n",
			r.server, yes(endpoint), *s.Protocol, yes(compatible), s.Socket)), nil
	}
	return rawText(fmt.Sprintf("status: running\nversion: %s\nprotocol: %d\ncompatible: %s\nsocket: %s\n",
		r.server, *s.Protocol, yes(compatible), s.Socket)), nil
}

// flagValue takes the value of the flag at args[i].
func flagValue(args []string, i int) (string, *cliError) {
	if i+1 >= len(args) {
		return "", usage("missing value for %s", args[i])
	}
	return args[i+1], nil
}

// eachOption walks args, which hold only options, as herdr's CLI parses
// them: an option in valued takes the next argument as its value, one in
// bare takes none, and any other is a usage error. set gets each option
// with its value ("" for a bare one), in order.
func eachOption(args, valued, bare []string, set func(opt, v string) *cliError) *cliError {
	for i := 0; i < len(args); i++ {
		opt, v := args[i], ""
		switch {
		case slices.Contains(valued, opt):
			var cerr *cliError
			if v, cerr = flagValue(args, i); cerr != nil {
				return cerr
			}
			i++
		case !slices.Contains(bare, opt):
			return usage("unknown option: %s", opt)
		}
		if cerr := set(opt, v); cerr != nil {
			return cerr
		}
	}
	return nil
}

func tabCreate(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	var wsID, cwd, label string
	env := map[string]string{}
	focus := false
	cerr := eachOption(args, []string{"--workspace", "--cwd", "--label", "--env"}, []string{"--focus", "--no-focus"}, func(opt, v string) *cliError {
		switch opt {
		case "--workspace":
			wsID = v
		case "--cwd":
			cwd = v
		case "--label":
			label = v
		case "--env":
			return putKeyValue(env, v, "env", "KEY", "key")
		case "--focus", "--no-focus":
			focus = opt == "--focus"
		}
		return nil
	})
	if cerr != nil {
		return nil, cerr
	}
	if wsID == "" {
		if wsID = st.ActiveWorkspace; wsID == "" {
			return nil, serverErr("workspace_not_found", "no active workspace")
		}
	}
	ws := st.Workspaces[wsID]
	if ws == nil {
		return nil, serverErr("workspace_not_found", "workspace %s not found", wsID)
	}
	t := &fakectl.Tab{ID: wsID + ":t" + publicNumber(ws.NextTab), WorkspaceID: wsID, Number: ws.NextTab, Label: label, Focused: focus, Seen: focus, Env: env}
	ws.NextTab++
	p := newPane(st, ws, t.ID, cwd)
	p.ShellReadyAt = nowMS() + int64(ctl.ShellInitMS)
	t.Panes = []string{p.ID}
	if t.Label == "" {
		t.Label = strconv.Itoa(t.Number)
	}
	st.Tabs[t.ID] = t
	return struct {
		Type     string   `json:"type"`
		Tab      tabInfo  `json:"tab"`
		RootPane paneInfo `json:"root_pane"`
	}{"tab_created", infoOfTab(st, t), infoOfPane(st, p)}, nil
}

// publicNumber is Herdr's bijective base-32 id number (src/workspace.rs
// encode_public_number): 1…9, A…Z without I, L, O, U, then 0 for 32, 11…
func publicNumber(n int) string {
	const alphabet = "123456789ABCDEFGHJKMNPQRSTVWXYZ0"
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{alphabet[(n-1)%32]}, b...)
		n = (n - 1) / 32
	}
	return string(b)
}

func newPane(st *fakectl.State, ws *fakectl.Workspace, tabID, cwd string) *fakectl.Pane {
	st.NextTerminal++
	// Terminal ids are the allocation time in microseconds and a counter
	// (src/terminal/id.rs), so a restarted server never repeats one.
	p := &fakectl.Pane{ID: ws.ID + ":p" + publicNumber(ws.NextPane), TerminalID: fmt.Sprintf("term_%x%x", time.Now().UnixMicro(), st.NextTerminal),
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

func infoOfTab(st *fakectl.State, t *fakectl.Tab) tabInfo {
	status := "unknown"
	for _, id := range t.Panes {
		if p := st.Panes[id]; p != nil && p.Agent != nil && !p.Agent.Exited {
			status = publicStatus(st, p)
		}
	}
	return tabInfo{t.ID, t.WorkspaceID, t.Number, t.Label, t.Focused, len(t.Panes), status}
}

// paneInfo follows herdr's PaneInfo field order (optional fields omitted).
type paneInfo struct {
	PaneID      string            `json:"pane_id"`
	TerminalID  string            `json:"terminal_id"`
	WorkspaceID string            `json:"workspace_id"`
	TabID       string            `json:"tab_id"`
	Focused     bool              `json:"focused"`
	Cwd         string            `json:"cwd,omitempty"`
	Agent       string            `json:"agent,omitempty"`
	AgentStatus string            `json:"agent_status"`
	Tokens      map[string]string `json:"tokens,omitempty"`
	Revision    int               `json:"revision"`
}

func infoOfPane(st *fakectl.State, p *fakectl.Pane) paneInfo {
	info := paneInfo{PaneID: p.ID, TerminalID: p.TerminalID, WorkspaceID: p.WorkspaceID, TabID: p.TabID, Cwd: p.Cwd,
		AgentStatus: "unknown", Tokens: p.Tokens}
	if p.Agent != nil && !p.Agent.Exited {
		info.Agent, info.AgentStatus = p.Agent.Kind, publicStatus(st, p)
	}
	return info
}

// publicStatus is the agent_status Herdr reports: "done" is idle in a tab
// not seen since (src/app/agents.rs), unknown while the launch is pending.
func publicStatus(st *fakectl.State, p *fakectl.Pane) string {
	switch s := p.Agent.Status; {
	case s == "starting" && p.Agent.Stuck:
		return idleOrDone(st, p)
	case s == "starting":
		return "unknown"
	case s == "idle":
		return idleOrDone(st, p)
	default:
		return s
	}
}

func idleOrDone(st *fakectl.State, p *fakectl.Pane) string {
	if t := st.Tabs[p.TabID]; t != nil && !t.Seen {
		return "done"
	}
	return "idle"
}

// workspaceInfo follows herdr's WorkspaceInfo field order
// (src/api/schema/workspaces.rs).
type workspaceInfo struct {
	WorkspaceID string `json:"workspace_id"`
	Number      int    `json:"number"`
	Label       string `json:"label"`
	Focused     bool   `json:"focused"`
	PaneCount   int    `json:"pane_count"`
	TabCount    int    `json:"tab_count"`
	ActiveTabID string `json:"active_tab_id"`
	AgentStatus string `json:"agent_status"`
}

func workspaceList(args []string, st *fakectl.State) (any, *cliError) {
	if len(args) != 0 {
		return nil, usage("usage: herdr workspace list")
	}
	list := []workspaceInfo{}
	for _, id := range workspaceOrder(st) {
		list = append(list, infoOfWorkspace(st, st.Workspaces[id]))
	}
	return struct {
		Type       string          `json:"type"`
		Workspaces []workspaceInfo `json:"workspaces"`
	}{"workspace_list", list}, nil
}

// workspaceOrder lists the workspace ids in the order they were created.
func workspaceOrder(st *fakectl.State) []string {
	ids := sortedKeys(st.Workspaces)
	sort.SliceStable(ids, func(i, j int) bool {
		return len(ids[i]) < len(ids[j]) || len(ids[i]) == len(ids[j]) && ids[i] < ids[j]
	})
	return ids
}

func infoOfWorkspace(st *fakectl.State, ws *fakectl.Workspace) workspaceInfo {
	info := workspaceInfo{WorkspaceID: ws.ID, Label: ws.Label, Focused: ws.ID == st.ActiveWorkspace, AgentStatus: "unknown"}
	if info.Label == "" {
		info.Label = ws.ID
	}
	for i, id := range workspaceOrder(st) {
		if id == ws.ID {
			info.Number = i + 1 // Herdr numbers workspaces by position
		}
	}
	for _, tid := range sortedKeys(st.Tabs) {
		if t := st.Tabs[tid]; t.WorkspaceID == ws.ID {
			if info.TabCount == 0 {
				info.ActiveTabID = tid
			}
			info.TabCount++
			info.PaneCount += len(t.Panes)
		}
	}
	return info
}

// newWorkspace adds a workspace with one tab and its root pane, focused
// when asked or when no workspace is active (create_workspace_with_options
// in src/app/creation.rs).
func newWorkspace(st *fakectl.State, ctl fakectl.Control, cwd, label string, focus bool, env map[string]string) (*fakectl.Workspace, *fakectl.Tab, *fakectl.Pane) {
	if st.NextWorkspace == 0 {
		st.NextWorkspace = 1
	}
	ws := &fakectl.Workspace{ID: "w" + publicNumber(st.NextWorkspace), Label: label, NextTab: 1, NextPane: 1}
	if ws.Label == "" && cwd != "" {
		ws.Label = filepath.Base(cwd)
	}
	st.NextWorkspace++
	st.Workspaces[ws.ID] = ws
	focus = focus || st.ActiveWorkspace == "" || st.Workspaces[st.ActiveWorkspace] == nil
	if focus {
		st.ActiveWorkspace = ws.ID
	}
	t := &fakectl.Tab{ID: ws.ID + ":t" + publicNumber(ws.NextTab), WorkspaceID: ws.ID, Number: ws.NextTab, Label: "1", Focused: focus, Seen: focus, Env: env}
	ws.NextTab++
	p := newPane(st, ws, t.ID, cwd)
	p.ShellReadyAt = nowMS() + int64(ctl.ShellInitMS)
	t.Panes = []string{p.ID}
	st.Tabs[t.ID] = t
	return ws, t, p
}

// workspaceCreate is `herdr workspace create` (src/cli/workspace.rs):
// --focus is off by default, but the first workspace becomes the active one.
func workspaceCreate(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	var cwd, label string
	env := map[string]string{}
	focus := false
	cerr := eachOption(args, []string{"--cwd", "--label", "--env"}, []string{"--focus", "--no-focus"}, func(opt, v string) *cliError {
		switch opt {
		case "--cwd":
			cwd = v
		case "--label":
			label = v
		case "--env":
			return putKeyValue(env, v, "env", "KEY", "key")
		case "--focus", "--no-focus":
			focus = opt == "--focus"
		}
		return nil
	})
	if cerr != nil {
		return nil, cerr
	}
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	ws, t, p := newWorkspace(st, ctl, cwd, label, focus, env)
	return struct {
		Type      string        `json:"type"`
		Workspace workspaceInfo `json:"workspace"`
		Tab       tabInfo       `json:"tab"`
		RootPane  paneInfo      `json:"root_pane"`
	}{"workspace_created", infoOfWorkspace(st, ws), infoOfTab(st, t), infoOfPane(st, p)}, nil
}

func paneGet(args []string, st *fakectl.State) (any, *cliError) {
	id, cerr := oneArg(args, "pane get <pane_id>")
	if cerr != nil {
		return nil, cerr
	}
	p := st.Panes[id]
	if p == nil {
		return nil, serverErr("pane_not_found", "pane %s not found", id)
	}
	return struct {
		Type string   `json:"type"`
		Pane paneInfo `json:"pane"`
	}{"pane_info", infoOfPane(st, p)}, nil
}

// putKeyValue stores the KEY=VALUE of a repeated option in m, a repeated
// key keeping its last value, with herdr's usage errors: flag names the
// option, form and key how herdr spells the key.
func putKeyValue(m map[string]string, v, flag, form, key string) *cliError {
	k, val, ok := strings.Cut(v, "=")
	if !ok {
		return usage("%s must use %s=VALUE", flag, form)
	}
	if k == "" {
		return usage("%s %s must not be empty", flag, key)
	}
	m[k] = val
	return nil
}

func oneArg(args []string, what string) (string, *cliError) {
	if len(args) != 1 {
		return "", usage("usage: herdr %s", what)
	}
	return args[0], nil
}

// tabArg is the tab named by a command's one argument; synopsis is the
// command's usage line for a wrong argument count.
func tabArg(args []string, st *fakectl.State, synopsis string) (*fakectl.Tab, *cliError) {
	id, cerr := oneArg(args, synopsis)
	if cerr != nil {
		return nil, cerr
	}
	t := st.Tabs[id]
	if t == nil {
		return nil, serverErr("tab_not_found", "tab %s not found", id)
	}
	return t, nil
}

func tabGet(args []string, st *fakectl.State) (any, *cliError) {
	t, cerr := tabArg(args, st, "tab get <tab_id>")
	if cerr != nil {
		return nil, cerr
	}
	return struct {
		Type string  `json:"type"`
		Tab  tabInfo `json:"tab"`
	}{"tab_info", infoOfTab(st, t)}, nil
}

func lastTab(st *fakectl.State, t *fakectl.Tab) bool {
	for _, other := range st.Tabs {
		if other.ID != t.ID && other.WorkspaceID == t.WorkspaceID {
			return false
		}
	}
	return true
}

func tabClose(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	t, cerr := tabArg(args, st, "tab close <tab_id>")
	if cerr != nil {
		return nil, cerr
	}
	if ctl.ConfirmClose && lastTab(st, t) {
		return nil, serverErr("confirmation_required", "closing this tab would close a worktree group")
	}
	for _, p := range t.Panes {
		endPaneProcess(p)
		delete(st.Panes, p)
	}
	delete(st.Tabs, t.ID)
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

func agentStart(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	var name, kind, paneID string
	var timeout uint64 = 30000
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
				// parse_u64_flag: any u64 passes the CLI; the server
				// checks the range.
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return nil, usage("invalid value for --timeout: %s", v)
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
	}
	// herdr's CLI retries agent_pane_busy for up to 2 s while the pane's
	// shell is still initializing, but only for a timeout the server
	// accepts, over 3000 and at most 300000 ms (src/cli/agent.rs
	// agent_start, retryable_timeout). So with --timeout 3000 a shell that
	// is not yet in the foreground answers agent_pane_busy at once, and a
	// ready one invalid_agent_timeout: the server checks the pane first.
	if p := st.Panes[paneID]; p != nil && (p.Agent == nil || p.Agent.Exited) && timeout > 3000 && timeout <= 300000 {
		if wait := p.ShellReadyAt - nowMS(); wait > 0 {
			time.Sleep(time.Duration(min(wait, 2000)) * time.Millisecond)
		}
	}
	// The server's checks, in the order of start_agent (src/app/agents.rs).
	if !validAgentName.MatchString(name) {
		return nil, serverErr("invalid_agent_name", invalidAgentNameMessage)
	}
	for _, a := range agentArgs {
		if strings.IndexFunc(a, unicode.IsControl) >= 0 {
			return nil, serverErr("invalid_agent_argument", "agent arguments cannot be encoded safely for the target shell")
		}
	}
	if other := findAgent(st, name); other != nil {
		return nil, nameTaken(st, name, other)
	}
	p := st.Panes[paneID]
	if p == nil {
		return nil, serverErr("agent_pane_not_found", "agent target pane %s not found", paneID)
	}
	if p.Agent != nil && !p.Agent.Exited {
		return nil, serverErr("agent_pane_busy", "agent target pane %s is not an available shell", paneID)
	}
	for _, u := range ctl.Unavailable {
		if u == paneID {
			return nil, serverErr("agent_pane_unavailable", "agent target pane %s has no live terminal", paneID)
		}
	}
	if nowMS() < p.ShellReadyAt { // available_shell_name: the shell is not yet the foreground job
		return nil, serverErr("agent_pane_busy", "agent target pane %s is not an available shell", paneID)
	}
	if timeout <= 3000 || timeout > 300000 {
		return nil, serverErr("invalid_agent_timeout", "agent start timeout must be greater than 3000ms and at most 300000ms")
	}
	if kind != "pi" {
		return nil, serverErr("agent_start_failed", "fakeherdr only runs pi")
	}
	now := nowMS()
	p.Agent = &fakectl.Agent{Name: name, Kind: kind, Status: "starting", Args: agentArgs, Seq: 1, ReadyAt: now + int64(ctl.StartDelayMS)}
	if ctl.Startup == "undetected" {
		p.Agent.ReadyAt = math.MaxInt64 // the process never shows as pi
	}
	return startWait{PaneID: paneID, Name: name, TerminalID: p.TerminalID, Deadline: now + int64(timeout), TimeoutMS: timeout,
		Argv: append([]string{"pi"}, agentArgs...)}, nil
}

// validAgentName and its message are valid_agent_name and
// INVALID_AGENT_NAME_MESSAGE of src/app/agents.rs.
var validAgentName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

const invalidAgentNameMessage = "agent name must start with a lowercase letter and contain only lowercase letters, digits, '-' or '_' (1-32 characters)"

// startWait is an agent start whose answer waits for the agent's launch to
// settle, as herdr's CLI polls agent.get after the server accepted it.
type startWait struct {
	PaneID, Name, TerminalID string
	Deadline                 int64
	TimeoutMS                uint64
	Argv                     []string
}

func (w startWait) wait(dir string, ctl fakectl.Control) (any, *cliError, error) {
	for {
		var out any
		var cerr *cliError
		done := false
		err := withState(dir, ctl, func(st *fakectl.State) error {
			p := st.Panes[w.PaneID]
			switch {
			case p == nil || p.TerminalID != w.TerminalID || p.Agent == nil || p.Agent.Name != w.Name:
				cerr, done = serverErr("agent_name_not_found", "named agent %s no longer owns the target terminal", w.Name), true
			case p.Agent.Exited:
				cerr, done = serverErr("agent_start_failed", "agent process exited before becoming interactive"), true
			case p.Agent.Status == "blocked":
				cerr, done = serverErr("agent_not_ready", "agent %s is blocked during startup and is not ready for prompts", w.Name), true
			case p.Agent.Status != "starting":
				out, done = struct {
					Type  string    `json:"type"`
					Agent agentInfo `json:"agent"`
					Argv  []string  `json:"argv"`
				}{"agent_started", infoOfAgent(st, p, ""), w.Argv}, true
			case nowMS() >= w.Deadline:
				// The server drops the managed launch at its deadline,
				// which frees the name (tests/cli/agents.rs
				// agent_start_timeout_releases_the_name_for_reuse); the
				// process still holds the pane.
				// A pi that reported idle (issue 3853) stays a known
				// agent; one Herdr never detected is no agent at all.
				p.Agent.Name, p.Agent.Dropped = "", true
				if p.Agent.Stuck {
					p.Agent.Status = "idle"
				} else {
					p.Agent.Status, p.Agent.ReadyAt, p.Agent.Unknown = "unknown", 0, true
				}
				cerr, done = serverErr("timeout", "timed out waiting for agent startup"), true
			}
			return nil
		})
		if err != nil || done {
			return out, cerr, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func findAgent(st *fakectl.State, target string) *fakectl.Pane {
	if p := st.Panes[target]; p != nil && knownAgent(p) {
		return p
	}
	for _, id := range sortedKeys(st.Panes) {
		if p := st.Panes[id]; knownAgent(p) && p.Agent.Name == target {
			return p
		}
	}
	return nil
}

// nameTaken is agent_name_taken with Herdr's message, which lists the
// agent holding the name (src/app/agents.rs agent_start_error_body; the
// status is AgentStatus's Debug form).
func nameTaken(st *fakectl.State, name string, holder *fakectl.Pane) *cliError {
	status := publicStatus(st, holder)
	cwd := holder.Cwd
	if cwd == "" {
		cwd = "unknown"
	}
	return serverErr("agent_name_taken", "agent name %s is already used; candidates: terminal_id=%s pane_id=%s workspace_id=%s tab_id=%s cwd=%s status=%s",
		name, holder.TerminalID, holder.ID, holder.WorkspaceID, holder.TabID, cwd, strings.ToUpper(status[:1])+status[1:])
}

// knownAgent is is_agent_terminal of src/terminal/state.rs: a pane whose
// agent Herdr knows, by name or by its detected or reported label.
func knownAgent(p *fakectl.Pane) bool {
	return p.Agent != nil && !p.Agent.Exited && !p.Agent.Unknown
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
	LaunchPending    bool              `json:"launch_pending,omitempty"`
	InteractiveReady bool              `json:"interactive_ready,omitempty"`
	StateChangeSeq   int               `json:"state_change_seq"`
	Cwd              string            `json:"cwd,omitempty"`
	Revision         int               `json:"revision"`
}

func infoOfAgent(st *fakectl.State, p *fakectl.Pane, statusOverride string) agentInfo {
	status := publicStatus(st, p)
	if statusOverride != "" {
		status = statusOverride
	}
	// launch_pending and interactive_ready are Herdr's managed launch
	// (managed_agent_launch_pending, managed_agent_interactive_ready):
	// a reported agent or a dropped launch has neither.
	managed := p.Agent.Managed()
	return agentInfo{TerminalID: p.TerminalID, Name: p.Agent.Name, Agent: p.Agent.Kind, AgentStatus: status,
		ScreenSkipped: p.Agent.Stuck, Tokens: p.Tokens, WorkspaceID: p.WorkspaceID, TabID: p.TabID, PaneID: p.ID,
		LaunchPending: managed && !p.Agent.Ready, InteractiveReady: managed && p.Agent.Ready,
		StateChangeSeq: p.Agent.Seq, Cwd: p.Cwd, Revision: p.Agent.Seq}
}

func agentPrompt(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	switch len(args) {
	case 0:
		return nil, usage("usage: herdr agent prompt <target> <text> [--wait] [--until STATUS]... [--timeout MS]")
	case 1:
		return nil, usage("agent prompt requires text")
	}
	target, text := args[0], args[1]
	wait, until, timeout := false, false, false
	cerr := eachOption(args[2:], []string{"--until", "--timeout"}, []string{"--wait"}, func(opt, _ string) *cliError {
		switch opt {
		case "--wait":
			wait = true
		case "--until":
			until = true
		default:
			timeout = true
		}
		return nil
	})
	if cerr != nil {
		return nil, cerr
	}
	// src/cli/agent.rs agent_prompt checks --until before --timeout.
	if until && !wait {
		return nil, usage("--until requires --wait")
	}
	if timeout && !wait {
		return nil, usage("--timeout requires --wait")
	}
	// The checks of handle_agent_prompt (src/app/api/agents.rs), in order.
	if text == "" {
		return nil, serverErr("empty_agent_prompt", "agent prompt must not be empty")
	}
	p := findAgent(st, target)
	if p == nil {
		return nil, serverErr("agent_not_found", "agent target %s not found", target)
	}
	if p.Agent.Status == "blocked" {
		return nil, serverErr("agent_blocked", "agent %s is blocked and requires interactive input", target)
	}
	if p.Agent.Managed() && !p.Agent.Ready {
		return nil, serverErr("agent_not_ready", "agent %s is not an active named agent", target)
	}
	if p.Agent.Reported {
		// Only a report names this agent; the pane's foreground is its
		// shell, which must not get the text (runtime_hosts_agent).
		return nil, serverErr("agent_not_ready", "agent %s is no longer the pane foreground process", target)
	}
	// The text is typed now and Enter pressed after a delay, so the answer
	// carries the state before the submission.
	info := infoOfAgent(st, p, "")
	p.Agent.Prompts = append(p.Agent.Prompts, text)
	submit := 300
	if ctl.PromptSubmitMS != nil {
		submit = *ctl.PromptSubmitMS
	}
	if submit >= 0 {
		p.Agent.EnterAt = nowMS() + int64(submit)
	}
	if wait {
		p.Agent.EnterAt = 0
		p.Agent.Seq += 2
		p.Agent.Status = "idle"
		info = infoOfAgent(st, p, "")
	}
	return struct {
		Type  string    `json:"type"`
		Agent agentInfo `json:"agent"`
	}{"agent_prompted", info}, nil
}

func agentGet(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	target, cerr := oneArg(args, "agent get <target>")
	if cerr != nil {
		return nil, cerr
	}
	p := findAgent(st, target)
	if p == nil {
		return nil, serverErr("agent_not_found", "agent target %s not found", target)
	}
	return struct {
		Type  string    `json:"type"`
		Agent agentInfo `json:"agent"`
	}{"agent_info", infoOfAgent(st, p, ctl.AgentStatus)}, nil
}

// agentRename is `herdr agent rename <target> <name>|--clear`
// (rename_agent_target in src/app/agents.rs): the name rule, a name held by
// another live agent, a launch still pending.
func agentRename(args []string, st *fakectl.State) (any, *cliError) {
	if len(args) != 2 {
		return nil, usage("usage: herdr agent rename <target> <name>|--clear")
	}
	p := findAgent(st, args[0])
	if p == nil {
		return nil, serverErr("agent_not_found", "agent target %s not found", args[0])
	}
	name := args[1]
	if name != "--clear" {
		if !validAgentName.MatchString(name) {
			return nil, serverErr("invalid_agent_name", invalidAgentNameMessage)
		}
		if other := findAgent(st, name); other != nil && other != p {
			return nil, nameTaken(st, name, other)
		}
	} else {
		name = ""
	}
	if p.Agent.Managed() && !p.Agent.Ready {
		return nil, serverErr("agent_launch_pending", "agent name cannot change while startup is pending")
	}
	p.Agent.Name = name
	return struct {
		Type  string    `json:"type"`
		Agent agentInfo `json:"agent"`
	}{"agent_info", infoOfAgent(st, p, "")}, nil
}

// agentList is `herdr agent list`: every pane hosting a started or
// reported agent.
func agentList(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	if len(args) != 0 {
		return nil, usage("usage: herdr agent list")
	}
	agents := []agentInfo{}
	for _, ws := range workspaceOrder(st) {
		for _, id := range sortedKeys(st.Panes) {
			if p := st.Panes[id]; p.WorkspaceID == ws && knownAgent(p) {
				agents = append(agents, infoOfAgent(st, p, ctl.AgentStatus))
			}
		}
	}
	return struct {
		Type   string      `json:"type"`
		Agents []agentInfo `json:"agents"`
	}{"agent_list", agents}, nil
}

func paneReportMetadata(args []string, st *fakectl.State) (any, *cliError) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, usage("usage: herdr pane report-metadata <pane_id> --source ID [--token NAME=VALUE]...")
	}
	paneID, source := args[0], ""
	// As in herdr's CLI, a repeated --token key keeps its last value, and
	// --clear-token NAME is the same as an empty value.
	tokens := map[string]string{}
	otherField := false
	cerr := eachOption(args[1:], []string{"--source", "--token", "--clear-token", "--agent", "--applies-to-source", "--display-agent", "--title", "--state-label", "--seq", "--ttl-ms"},
		[]string{"--clear-title", "--clear-display-agent", "--clear-state-labels"}, func(opt, v string) *cliError {
			switch opt {
			case "--source":
				source = v
			case "--token":
				return putKeyValue(tokens, v, "token", "NAME", "name")
			case "--clear-token":
				tokens[v] = ""
			case "--display-agent", "--title", "--state-label", "--clear-title", "--clear-display-agent", "--clear-state-labels":
				otherField = true
			}
			return nil
		})
	if cerr != nil {
		return nil, cerr
	}
	// The CLI's own checks (pane_report_metadata in src/cli/pane.rs): a
	// blank source and a report with nothing to set are usage errors.
	if source = strings.TrimSpace(source); source == "" {
		return nil, usage("missing required --source")
	}
	if len(tokens) == 0 && !otherField {
		return nil, usage("missing metadata field to set or clear")
	}
	if p := st.Panes[paneID]; p == nil {
		return nil, serverErr("pane_not_found", "pane %s not found", paneID)
	}
	// handle_pane_report_metadata (src/app/api/panes.rs): source, then
	// tokens (normalize_metadata_tokens in src/app/api_helpers.rs), then
	// the per-terminal limit, then the merge (src/metadata_tokens.rs).
	switch {
	case len([]rune(source)) > 80:
		return nil, serverErr("invalid_metadata_source", "metadata source must be 80 characters or fewer")
	case !regexp.MustCompile(`^[A-Za-z0-9:._-]+$`).MatchString(source):
		return nil, serverErr("invalid_metadata_source", "metadata source may contain only ASCII letters, digits, colon, dot, underscore, and hyphen")
	}
	if len(tokens) > 16 {
		return nil, serverErr("invalid_metadata_token", "a metadata report may update at most 16 tokens")
	}
	patch := map[string]*string{}
	for _, k := range sortedKeys(tokens) {
		if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`).MatchString(k) {
			return nil, serverErr("invalid_metadata_token", "invalid metadata token key: %s", k)
		}
		v := []rune(strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, strings.TrimSpace(tokens[k])))
		if len(v) > 80 {
			v = v[:80]
		}
		if norm := strings.TrimSpace(string(v)); norm != "" {
			patch[k] = &norm
		} else {
			patch[k] = nil // an empty value clears the token
		}
	}
	p := st.Panes[paneID]
	merged := map[string]string{}
	for k, v := range p.Tokens {
		merged[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = *v
		}
	}
	if len(merged) > 32 {
		return nil, serverErr("metadata_token_limit", "pane metadata may contain at most 32 tokens")
	}
	p.Source, p.Tokens = source, merged
	if len(merged) == 0 {
		p.Tokens = nil
	}
	return nil, nil
}

// paneReportAgent is `herdr pane report-agent` (src/cli/pane.rs): a
// reporter's state for the pane's agent. On a pane without an agent the
// report makes one known (agent get and list show it), but no agent process
// runs there, so agent prompt refuses it.
func paneReportAgent(args []string, st *fakectl.State) (any, *cliError) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, usage("usage: herdr pane report-agent <pane_id> --source ID --agent LABEL --state idle|working|blocked|unknown [--message TEXT] [--seq N] [--agent-session-id ID] [--agent-session-path PATH]")
	}
	paneID := args[0]
	var source, label, state string
	cerr := eachOption(args[1:], []string{"--source", "--agent", "--state", "--message", "--seq", "--agent-session-id", "--agent-session-path"}, nil, func(opt, v string) *cliError {
		switch opt {
		case "--source":
			source = v
		case "--agent":
			label = v
		case "--state":
			switch v {
			case "idle", "working", "blocked", "unknown":
				state = v
			default:
				// parse_pane_agent_state fails as an io::Error: exit 1,
				// no envelope.
				return &cliError{exit: 1, message: fmt.Sprintf("Error: Custom { kind: Other, error: \"invalid pane agent state: %s (expected idle, working, blocked, or unknown)\" }", v)}
			}
		}
		return nil
	})
	switch {
	case cerr != nil:
		return nil, cerr
	case strings.TrimSpace(source) == "":
		return nil, usage("missing required --source")
	case label == "":
		return nil, usage("missing required --agent")
	case state == "":
		return nil, usage("missing required --state")
	}
	p := st.Panes[paneID]
	if p == nil {
		return nil, serverErr("pane_not_found", "pane %s not found", paneID)
	}
	a := p.Agent
	if a == nil || a.Exited || a.Unknown {
		a = &fakectl.Agent{Kind: label, Status: "unknown", Reported: true}
		p.Agent = a
	}
	if a.Status != "starting" && a.Status != state {
		a.Status = state
		a.Seq++
		// A launch blocked on a startup dialog becomes interactive_ready
		// once it is idle (reconcile_managed_agent_at).
		a.Ready = a.Ready || a.Managed() && state == "idle"
	}
	return nil, nil
}

// paneProcessInfo is `herdr pane process-info [--pane P]` (pane.process_info,
// PaneProcessInfo in src/api/schema/panes.rs). The fake runs no processes,
// so the pids are made up, but the shape follows what herdr's CLI reads in
// pane_shell_is_initializing: while the shell initializes another process
// shares its foreground group; at the prompt the shell is alone in it; an
// agent is a foreground group of its own. A shell that initializes is the
// contract suite's delayed-shell wrapper (tests/cli/agents.rs
// write_delayed_shell_and_fake_pi): for the first third of its start it is
// alone in its group but named delayed-shell (its comm), which the server
// does not take as a shell (available_pane_shell_from_job in
// src/platform/mod.rs), then its sleep joins it.
func paneProcessInfo(args []string, st *fakectl.State, ctl fakectl.Control) (any, *cliError) {
	var paneID string
	switch {
	case len(args) == 2 && args[0] == "--pane":
		paneID = args[1]
	case len(args) == 1 && !strings.HasPrefix(args[0], "-"):
		paneID = args[0]
	default:
		return nil, usage("usage: herdr pane process-info [--pane ID|--current]")
	}
	p := st.Panes[paneID]
	if p == nil {
		return nil, serverErr("pane_not_found", "pane %s not found", paneID)
	}
	type process struct {
		PID  int      `json:"pid"`
		Name string   `json:"name"`
		Argv []string `json:"argv,omitempty"`
	}
	type processInfo struct {
		PaneID     string    `json:"pane_id"`
		ShellPID   int       `json:"shell_pid"`
		Group      int       `json:"foreground_process_group_id"`
		Foreground []process `json:"foreground_processes,omitempty"`
	}
	shell := 10000 + 10*terminalNumber(p)
	info := processInfo{PaneID: p.ID, ShellPID: shell, Group: shell}
	switch {
	case p.Agent != nil && !p.Agent.Exited && !p.Agent.Reported:
		info.Group = shell + 2
		info.Foreground = []process{{shell + 2, p.Agent.Kind, append([]string{p.Agent.Kind}, p.Agent.Args...)}}
	case nowMS() < p.ShellReadyAt-int64(ctl.ShellInitMS)*2/3:
		info.Foreground = []process{{shell, "delayed-shell", []string{"/bin/sh", "delayed-shell"}}}
	case nowMS() < p.ShellReadyAt:
		info.Foreground = []process{{shell, "delayed-shell", []string{"/bin/sh", "delayed-shell"}}, {shell + 1, "sleep", []string{"/bin/sleep", "1"}}}
	default:
		info.Foreground = []process{{shell, "sh", []string{"/bin/sh"}}}
	}
	return struct {
		Type        string      `json:"type"`
		ProcessInfo processInfo `json:"process_info"`
	}{"pane_process_info", info}, nil
}

// terminalNumber is the counter part of a fake terminal id.
func terminalNumber(p *fakectl.Pane) int {
	n := 0
	for _, r := range p.ID {
		n = n*31 + int(r)
	}
	return n % 100000
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
		if strings.HasPrefix(k, "HERDR_") || strings.HasPrefix(k, envvar.PiPrefix) {
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

func readControl(dir string) (fakectl.Control, error) {
	var ctl fakectl.Control
	data, err := os.ReadFile(filepath.Join(dir, "control.json"))
	if errors.Is(err, os.ErrNotExist) {
		return ctl, nil
	}
	if err != nil {
		return ctl, err
	}
	// An unknown knob is a misspelt one, which must fail rather than be
	// silently ignored.
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
func loadState(dir string) (*fakectl.State, error) {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		st := &fakectl.State{Workspaces: map[string]*fakectl.Workspace{}, Tabs: map[string]*fakectl.Tab{}, Panes: map[string]*fakectl.Pane{}}
		// No `herdr server` was run: this is the server herdr starts on
		// its own when a user runs herdr (src/server/autodetect.rs), which
		// passes HERDR_STARTUP_CWD and so begins with one workspace.
		ws := &fakectl.Workspace{ID: "w1", NextTab: 1, NextPane: 1}
		st.Workspaces[ws.ID] = ws
		st.NextWorkspace, st.ActiveWorkspace = 2, ws.ID
		t := &fakectl.Tab{ID: "w1:t1", WorkspaceID: "w1", Number: 1, Label: "main", Focused: true, Seen: true}
		ws.NextTab++
		p := newPane(st, ws, t.ID, "")
		t.Panes = []string{p.ID}
		st.Tabs[t.ID] = t
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	var st fakectl.State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("state.json: %w", err)
	}
	if st.Workspaces == nil {
		st.Workspaces = map[string]*fakectl.Workspace{}
	}
	if st.Tabs == nil {
		st.Tabs = map[string]*fakectl.Tab{}
	}
	if st.Panes == nil {
		st.Panes = map[string]*fakectl.Pane{}
	}
	return &st, nil
}

func saveState(dir string, st *fakectl.State) error {
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

package pibridge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/facets-dev/facets/runtime/channel"
)

// tmuxServer is a private tmux server (never the user's) whose session
// "main" holds the pane a Main Pi runs "in": the Main gets its $TMUX and
// $TMUX_PANE. Its global environment is the Pi test environment, as a
// user's server has their shell's.
type tmuxServer struct {
	t            *testing.T
	socket, pane string
}

func (e *piEnv) startTmux() (*tmuxServer, []string) {
	e.t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		e.t.Fatalf("tmux is not installed; the tmux tests drive the real tmux (apt-get install -y tmux, as .ci/run does): %v", err)
	}
	dir, err := os.MkdirTemp("", "ftmux") // a socket path must be short
	if err != nil {
		e.t.Fatal(err)
	}
	s := &tmuxServer{t: e.t, socket: filepath.Join(dir, "s")}
	e.t.Cleanup(func() {
		// The Subs' Pis end with the server (SIGHUP) and write their last
		// words to their channels as they go: wait for every pane's process
		// group to be gone before the test's directories are removed.
		out, _ := exec.Command("tmux", "-S", s.socket, "list-panes", "-a", "-F", "#{pane_pid}").Output()
		exec.Command("tmux", "-S", s.socket, "kill-server").Run()
		for _, f := range strings.Fields(string(out)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			for deadline := time.Now().Add(15 * time.Second); syscall.Kill(-pid, 0) == nil && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
		}
		os.RemoveAll(dir)
	})
	// Pi's own launcher, as "pi" on PATH.
	i := strings.LastIndex(e.inst.cli, string(filepath.Separator)+"node_modules"+string(filepath.Separator))
	bin := filepath.Join(e.inst.cli[:i], "node_modules", ".bin")
	path := "PATH=" + bin + string(os.PathListSeparator) + filepath.Dir(e.inst.node) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd := exec.Command("tmux", "-S", s.socket, "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "--", "sleep", "1000000")
	cmd.Env = append(append([]string(nil), e.env...), path, "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	s.pane = strings.TrimSpace(s.tmux("display-message", "-p", "-t", "main:", "#{pane_id}"))
	return s, []string{path, "TMUX=" + s.socket + ",1,0", "TMUX_PANE=" + s.pane}
}

func (s *tmuxServer) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// windows lists the session's windows: id, name and run option.
func (s *tmuxServer) windows() []string {
	return strings.Split(strings.TrimSpace(s.tmux("list-windows", "-t", "main", "-F", "#{window_id}|#{window_name}|#{@facets_run}")), "\n")
}

// TestDelegateTalkCloseInTmuxWithRealPi: a Main Pi in tmux (no Herdr
// anywhere) delegates; the Sub opens in a background window of the Main's
// session as a real interactive Pi, starts its task itself (nothing is
// typed), talks to the Main, gets the Main's answer, talks again, and
// close_sub closes its window.
func TestDelegateTalkCloseInTmuxWithRealPi(t *testing.T) {
	const task = "COUNT_TASK: count the files"
	const more = "MORE_TASK: and the directories?"
	var runIDs sync.Map
	mock := startMock(t, delegateTalkCloseScript(&runIDs, "Count #{pane_id};", task, more))
	e := newPiEnv(t, mock)
	e.profile("orchestrator", map[string]any{"description": "Delegates work", "model": "mock/mock-model",
		"tools": []string{"read", "delegate", "talk", "close_sub", "list_sub"}, "invocation": "manual"})
	e.profile("worker", map[string]any{"description": "Counts things", "model": "mock/mock-model",
		"tools": []string{"read", "grep"}, "instructions": "Count precisely."})
	srv, tmuxEnv := e.startTmux()

	start := time.Now()
	main := e.startRPC(tmuxEnv, "--no-extensions", "-e", e.bridge, "--profile", "orchestrator", "--session-id", "facets-main-tmux")
	main.send(map[string]any{"id": "p1", "type": "prompt", "message": "please delegate the count"})
	if r := main.response("p1"); r["success"] != true {
		t.Fatalf("prompt: %v", r)
	}
	// The Sub's window: in the Main's session, named literally, carrying
	// its run id, and not the active window.
	var subWindow string
	main.waitFor("the Sub's window", 30*time.Second, func([]map[string]any) bool {
		for _, w := range srv.windows() {
			if f := strings.SplitN(w, "|", 3); len(f) == 3 && f[2] != "" {
				subWindow = w
				return true
			}
		}
		return false
	})
	if f := strings.SplitN(subWindow, "|", 3); f[1] != "↳ pi · Count #{pane_id};" {
		t.Errorf("Sub window %q: want the title shown literally", subWindow)
	}
	if active := strings.TrimSpace(srv.tmux("display-message", "-p", "-t", "main:", "#{window_id}")); strings.HasPrefix(subWindow, active+"|") {
		t.Errorf("the Sub's window took the focus")
	}
	main.waitFor("the Main's model to close the Sub", 90*time.Second, func([]map[string]any) bool {
		for _, r := range mock.Requests() {
			if l := r.last(); l.Role == "tool" && strings.Contains(l.text(), "Closed Sub") {
				return true
			}
		}
		return false
	})
	t.Logf("delegate → talk → talk back → talk → close_sub in tmux took %v", time.Since(start))
	main.waitFor("the Sub's window to close", 10*time.Second, func([]map[string]any) bool { return len(srv.windows()) == 1 })

	// The Sub's first user message was its task, which nobody typed; it
	// got the Main's answer as a delivery.
	var first, answered bool
	for _, r := range mock.Requests() {
		if !strings.Contains(r.system(), "<facets_sub_protocol>") {
			continue
		}
		for _, m := range r.Messages {
			if m.Role == "user" {
				first = first || strings.Contains(m.text(), task)
				break
			}
		}
		answered = answered || strings.Contains(r.last().text(), more)
	}
	if !first || !answered {
		t.Errorf("the Sub's first user message was its task: %v; it got the Main's answer: %v", first, answered)
	}
	if _, ok := runIDs.Load("run"); !ok {
		t.Error("the Main never got the Sub's message")
	}
	// One Sub alone: from the delegate call to the Sub's first request.
	var delegatedAt, subAt time.Time
	for k, r := range mock.Requests() {
		at := mock.RequestTimes()[k]
		switch sub := strings.Contains(r.system(), "<facets_sub_protocol>"); {
		case !sub && delegatedAt.IsZero():
			delegatedAt = at
		case sub && subAt.IsZero():
			subAt = at
		}
	}
	t.Logf("one Sub in tmux: %v from the delegate call to its first model request", subAt.Sub(delegatedAt).Round(time.Millisecond))
}

// TestFourSubsAtOnceInTmuxWithRealPi: four delegate calls in one turn of
// the Main all start, each Sub in its own window with its own task as its
// first user message (nothing typed, so nothing garbled); the test logs how
// long each Sub took from the delegate calls to its first model request,
// beside a plain Pi's own start.
func TestFourSubsAtOnceInTmuxWithRealPi(t *testing.T) {
	var delegated sync.Once
	var delegatedAt time.Time
	mock := startMock(t, func(n int, req chatRequest) reply {
		last := req.last()
		text := last.text()
		if strings.Contains(req.system(), "<facets_sub_protocol>") {
			for i := range 4 {
				if tag := fmt.Sprintf("TASK_%d:", i); last.Role == "user" && strings.Contains(text, tag) {
					return reply{Tool: "talk", Args: map[string]any{"message": fmt.Sprintf("done %d", i)}}
				}
			}
			return reply{Text: "sub: idle"}
		}
		switch {
		case last.Role == "user" && strings.HasPrefix(text, channel.DeliveryPrefix):
			return reply{Text: "noted"}
		case last.Role == "user":
			delegated.Do(func() { delegatedAt = time.Now() })
			var calls []reply
			for i := range 4 {
				calls = append(calls, reply{Tool: "delegate", Args: map[string]any{
					"title": fmt.Sprintf("Sub %d", i), "task": fmt.Sprintf("TASK_%d: part %d of the work", i, i), "profile": "worker"}})
			}
			return reply{Calls: calls}
		}
		return reply{Text: "waiting"}
	})
	e := newPiEnv(t, mock)
	e.profile("orchestrator", map[string]any{"description": "Delegates work", "model": "mock/mock-model",
		"tools": []string{"read", "delegate", "talk", "close_sub", "list_sub"}, "invocation": "manual"})
	e.profile("worker", map[string]any{"description": "Does a part", "model": "mock/mock-model", "tools": []string{"read"}})
	srv, tmuxEnv := e.startTmux()

	// Pi's own start, for scale: a plain Pi answering one prompt.
	piStart := time.Now()
	e.run(nil, "--no-extensions", "-p", "hello")
	piOwn := time.Since(piStart)

	main := e.startRPC(tmuxEnv, "--no-extensions", "-e", e.bridge, "--profile", "orchestrator", "--session-id", "facets-main-four")
	main.send(map[string]any{"id": "p1", "type": "prompt", "message": "split the work four ways"})
	if r := main.response("p1"); r["success"] != true {
		t.Fatalf("prompt: %v", r)
	}
	first := map[int]time.Time{}
	main.waitFor("four Subs to report", 120*time.Second, func([]map[string]any) bool {
		reqs, times := mock.Requests(), mock.RequestTimes()
		for k, r := range reqs {
			if !strings.Contains(r.system(), "<facets_sub_protocol>") {
				continue
			}
			for _, m := range r.Messages {
				if m.Role != "user" {
					continue
				}
				for i := range 4 {
					if strings.Contains(m.text(), fmt.Sprintf("TASK_%d:", i)) {
						if _, seen := first[i]; !seen {
							first[i] = times[k]
						}
					}
				}
				break // the first user message only
			}
		}
		return len(first) == 4
	})
	var runs []string
	for _, w := range srv.windows() {
		if f := strings.SplitN(w, "|", 3); len(f) == 3 && f[2] != "" {
			runs = append(runs, f[2])
		}
	}
	if slices.Sort(runs); len(slices.Compact(runs)) != 4 {
		t.Errorf("windows with a run: %q, want four, each its own", srv.windows())
	}
	var ready []string
	for i := range 4 {
		d := first[i].Sub(delegatedAt)
		ready = append(ready, d.Round(time.Millisecond).String())
		if d > piOwn+10*time.Second {
			t.Errorf("Sub %d took %v from the delegate calls to its first request (a plain Pi: %v)", i, d, piOwn)
		}
	}
	t.Logf("four Subs in tmux, delegate calls to each Sub's first model request: %s; a plain Pi's own start and answer: %v", strings.Join(ready, ", "), piOwn.Round(time.Millisecond))
}

// facets runs this test's facets binary as the Main's runtime commands run
// it, and returns its stdout (the JSON format), failing on exit codes other
// than want.
func (e *piEnv) facetsJSON(env []string, want int, args ...string) map[string]any {
	e.t.Helper()
	stdout, stderr, code := e.runCmd(env, e.facets, append(args, "--format", "json")...)
	if code != want {
		e.t.Fatalf("facets %q: exit %d, want %d\n%s%s", args, code, want, stdout, stderr)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		e.t.Fatalf("facets %q: %v\n%s", args, err, stdout)
	}
	return v
}

// openRuns is facets list --all: run id → status.
func openRuns(l map[string]any) map[string]string {
	out := map[string]string{}
	for _, o := range l["open"].([]any) {
		m := o.(map[string]any)
		out[m["runId"].(string)] = m["status"].(string)
	}
	return out
}

// TestKilledWindowAndServerInTmuxWithRealPi: a Sub window the user kills
// by hand ends its run as a manually closed Sub (its Pi says so through its
// channel); after a crash (the Sub's Pi killed outright, then the whole
// tmux server), the run is listed as gone and facets close releases it.
func TestKilledWindowAndServerInTmuxWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply {
		last := req.last()
		text := last.text()
		if strings.Contains(req.system(), "<facets_sub_protocol>") {
			if last.Role == "user" && strings.Contains(text, "HELLO_TASK") {
				return reply{Tool: "talk", Args: map[string]any{"message": "hello from the Sub"}}
			}
			return reply{Text: "sub: idle"}
		}
		switch {
		case last.Role == "user" && strings.HasPrefix(text, channel.DeliveryPrefix):
			return reply{Text: "noted"}
		case last.Role == "user":
			return reply{Tool: "delegate", Args: map[string]any{"title": "Hello", "task": "HELLO_TASK: say hello", "profile": "worker"}}
		}
		return reply{Text: "waiting"}
	})
	e := newPiEnv(t, mock)
	e.profile("orchestrator", map[string]any{"description": "Delegates work", "model": "mock/mock-model",
		"tools": []string{"read", "delegate", "talk", "close_sub", "list_sub"}, "invocation": "manual"})
	e.profile("worker", map[string]any{"description": "Says hello", "model": "mock/mock-model", "tools": []string{"read"}})
	srv, tmuxEnv := e.startTmux()
	const session = "facets-main-kill"
	main := e.startRPC(tmuxEnv, "--no-extensions", "-e", e.bridge, "--profile", "orchestrator", "--session-id", session)
	runEnv := append(append([]string(nil), tmuxEnv...), "PI_FACETS_MAIN_SESSION="+session)
	delegateOne := func(id string) (runID, window string) {
		t.Helper()
		before := len(mock.Requests())
		main.send(map[string]any{"id": id, "type": "prompt", "message": "delegate a hello"})
		if r := main.response(id); r["success"] != true {
			t.Fatalf("prompt: %v", r)
		}
		main.waitFor("the Sub's hello to reach the Main", 60*time.Second, func([]map[string]any) bool {
			for _, r := range mock.Requests()[before:] {
				if l := r.last(); l.Role == "user" && strings.Contains(l.text(), "hello from the Sub") {
					return true
				}
			}
			return false
		})
		for _, w := range srv.windows() {
			if f := strings.SplitN(w, "|", 3); len(f) == 3 && f[2] != "" {
				if _, seen := openRuns(e.facetsJSON(runEnv, 0, "list", "--all"))[f[2]]; seen {
					return f[2], f[0]
				}
			}
		}
		t.Fatalf("no open run with a window: %q", srv.windows())
		return "", ""
	}

	// The user kills the Sub's window: its Pi records a manual close, and
	// the run is no longer open.
	run1, window1 := delegateOne("p1")
	srv.tmux("kill-window", "-t", window1)
	main.waitFor("the killed Sub's run to end", 20*time.Second, func([]map[string]any) bool {
		_, open := openRuns(e.facetsJSON(runEnv, 0, "list", "--all"))[run1]
		return !open
	})

	// A crash: the Main has stopped, the Sub's last message waits for it,
	// the Sub's Pi dies without a word (SIGKILL), then the whole server
	// goes. The run is gone; close releases it and keeps the message.
	run2, window2 := delegateOne("p2")
	main.stop()
	var rec struct{ ChannelDir string }
	data, err := os.ReadFile(filepath.Join(e.agentDir, "facets", "state", session, "runs", run2+".json"))
	if err != nil || json.Unmarshal(data, &rec) != nil {
		t.Fatalf("run record: %v %s", err, data)
	}
	token, err := os.ReadFile(filepath.Join(rec.ChannelDir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := channel.Open(rec.ChannelDir, strings.TrimSpace(string(token)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Send(channel.ToMain, "last words"); err != nil {
		t.Fatal(err)
	}
	ch.Close()
	pid, err := strconv.Atoi(strings.TrimSpace(srv.tmux("display-message", "-p", "-t", window2, "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	srv.tmux("kill-server")
	if st := openRuns(e.facetsJSON(runEnv, 0, "list", "--all"))[run2]; st != "gone" {
		t.Errorf("after kill-server the run is %q, want gone", st)
	}
	if c := e.facetsJSON(runEnv, 0, "close", "--run", run2); c["ok"] != true || c["retained"] != true {
		t.Errorf("close after kill-server: %v, want ok and the channel retained for the message", c)
	}
	if msgs, _, err := mustOpen(t, rec.ChannelDir, string(token)).Pending(channel.ToMain); err != nil || len(msgs) != 1 || msgs[0].Text != "last words" {
		t.Errorf("the Sub's last message after close: %v %v", msgs, err)
	}
	if runs := openRuns(e.facetsJSON(runEnv, 0, "list", "--all")); len(runs) != 0 {
		t.Errorf("open runs after close: %v", runs)
	}
}

// TestProfileCommandAndResumeInTmuxWithRealPi: /sub:review opens the
// user's persistent reviewer in a tmux window with the request as its
// first message; a second /sub:review is queued to that same Sub; closed,
// the next /sub:review resumes its session in a new window, where the Sub
// still has the first request in its history.
func TestProfileCommandAndResumeInTmuxWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply {
		last := req.last()
		text := last.text()
		if strings.Contains(req.system(), "<facets_sub_protocol>") && last.Role == "user" {
			for _, k := range []string{"THIRD", "MR 43", "MR 42"} {
				if strings.Contains(text, k) {
					return reply{Tool: "talk", Args: map[string]any{"message": k + " reviewed"}}
				}
			}
		}
		return reply{Text: "ok"}
	})
	e := newPiEnv(t, mock)
	e.profile("review", map[string]any{"description": "MR review", "invocation": "manual", "model": "mock/mock-model",
		"tools": []string{"read"}, "sessionPersistence": "persistent"})
	srv, tmuxEnv := e.startTmux()
	const session = "facets-main-sub"
	main := e.startRPC(tmuxEnv, "--no-extensions", "-e", e.bridge, "--session-id", session)
	runEnv := append(append([]string(nil), tmuxEnv...), "PI_FACETS_MAIN_SESSION="+session)
	command := func(id, text, action string) {
		t.Helper()
		main.send(map[string]any{"id": id, "type": "prompt", "message": text})
		main.response(id)
		main.waitFor("the "+action+" notification", 30*time.Second, func(evs []map[string]any) bool {
			for _, ev := range evs {
				if msg, _ := ev["message"].(string); ev["method"] == "notify" && strings.HasPrefix(msg, action+": review · ") {
					return true
				}
			}
			return false
		})
	}
	reviewed := func(k string) {
		t.Helper()
		main.waitFor("the Sub's "+k+" answer at the Main", 60*time.Second, func([]map[string]any) bool {
			for _, r := range mock.Requests() {
				if l := r.last(); !strings.Contains(r.system(), "<facets_sub_protocol>") && strings.Contains(l.text(), k+" reviewed") {
					return true
				}
			}
			return false
		})
	}
	subWindows := func() []string {
		var out []string
		for _, w := range srv.windows() {
			if f := strings.SplitN(w, "|", 3); len(f) == 3 && f[2] != "" {
				out = append(out, f[0])
			}
		}
		return out
	}

	command("c1", "/sub:review check MR 42", "created")
	reviewed("MR 42")
	first := subWindows()
	command("c2", "/sub:review and MR 43", "queued")
	reviewed("MR 43")
	if now := subWindows(); len(first) != 1 || !slices.Equal(now, first) {
		t.Fatalf("Sub windows %q after the queued request, want the one %q", now, first)
	}
	var runID string
	for id := range openRuns(e.facetsJSON(runEnv, 0, "list", "--all")) {
		runID = id
	}
	if c := e.facetsJSON(runEnv, 0, "close", "--run", runID); c["ok"] != true {
		t.Fatalf("close: %v", c)
	}
	main.waitFor("the Sub's window to close", 10*time.Second, func([]map[string]any) bool { return len(subWindows()) == 0 })

	command("c3", "/sub:review THIRD look", "resumed")
	reviewed("THIRD")
	if now := subWindows(); len(now) != 1 || now[0] == first[0] {
		t.Errorf("the resumed Sub's window %q, want a new one (the first was %q)", now, first)
	}
	var history bool
	for _, r := range mock.Requests() {
		if strings.Contains(r.system(), "<facets_sub_protocol>") && strings.Contains(r.last().text(), "THIRD") {
			for _, m := range r.Messages {
				history = history || strings.Contains(m.text(), "MR 42")
			}
		}
	}
	if !history {
		t.Error("the resumed Sub has not the first request in its history")
	}
}

func mustOpen(t *testing.T, dir, token string) *channel.Channel {
	t.Helper()
	ch, err := channel.Open(dir, strings.TrimSpace(token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	return ch
}

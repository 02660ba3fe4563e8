package herdr

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeSocket is a Herdr API socket that records requests and answers each
// with reply (or nothing, when reply is "hang").
type fakeSocket struct {
	path string

	mu       sync.Mutex
	reply    string
	requests []map[string]any
	// plugins are the installed plugins by id, true when enabled; Herdr
	// checks a "plugin:<id>" view source against them.
	plugins map[string]bool
}

func newFakeSocket(t *testing.T) *fakeSocket {
	t.Helper()
	// Unix socket paths are limited to ~108 bytes, so avoid t.TempDir.
	dir, err := os.MkdirTemp("", "hv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &fakeSocket{path: filepath.Join(dir, "herdr.sock"), reply: "ok", plugins: map[string]bool{"facets.agent-visibility": true}}
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for {
			conn, err := ln.Accept()
			if err != nil {
				wg.Wait()
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(conn)
			}()
		}
	}()
	return s
}

func (s *fakeSocket) serve(conn net.Conn) {
	defer conn.Close()
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return
	}
	var req map[string]any
	_ = json.Unmarshal(line, &req)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	reply := s.reply
	s.mu.Unlock()
	id, _ := req["id"].(string)
	switch reply {
	case "ok":
		var out []byte
		if code, msg := s.checkView(req); code != "" {
			out, _ = json.Marshal(map[string]any{"id": id, "error": map[string]any{"code": code, "message": msg}})
		} else {
			out, _ = json.Marshal(map[string]any{"id": id, "result": map[string]any{"type": "agent_view", "active": req["method"] == "agent.view.set"}})
		}
		conn.Write(append(out, '\n'))
	case "hang":
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = bufio.NewReader(conn).ReadBytes('\n') // until the client gives up
	case "close":
	default:
		conn.Write([]byte(reply))
	}
}

// checkView answers agent.view.set as handle_agent_view_set does
// (src/app/api/agent_view.rs): the view must be valid, and a plugin-owned
// source must name an installed, enabled plugin.
func (s *fakeSocket) checkView(req map[string]any) (code, message string) {
	if req["method"] != "agent.view.set" {
		return "", ""
	}
	params, _ := req["params"].(map[string]any)
	source, _ := params["source"].(string)
	if strings.TrimSpace(source) == "" {
		return "invalid_agent_view", "agent view source must not be empty"
	}
	if f, ok := params["filter"].(map[string]any); ok && !validViewFilter(f) {
		return "invalid_agent_view", "invalid agent view filter"
	}
	id, owned := strings.CutPrefix(source, "plugin:")
	if !owned {
		return "", ""
	}
	if id = strings.TrimSpace(id); id == "" || strings.IndexFunc(id, func(r rune) bool {
		return !(r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":._-", r)))
	}) >= 0 {
		return "invalid_agent_view", "plugin-owned agent view source has an invalid plugin id"
	}
	s.mu.Lock()
	enabled, installed := s.plugins[id]
	s.mu.Unlock()
	switch {
	case !installed:
		return "plugin_not_found", "plugin not found"
	case !enabled:
		return "plugin_disabled", "plugin is disabled"
	}
	return "", ""
}

// validViewFilter accepts Herdr's filter ops (all, any, not, eq, in,
// exists) with their operands.
func validViewFilter(f map[string]any) bool {
	switch f["op"] {
	case "all", "any":
		fs, ok := f["filters"].([]any)
		for _, sub := range fs {
			if m, _ := sub.(map[string]any); m == nil || !validViewFilter(m) {
				return false
			}
		}
		return ok
	case "not":
		m, _ := f["filter"].(map[string]any)
		return m != nil && validViewFilter(m)
	case "eq":
		return f["field"] != nil && f["value"] != nil
	case "in":
		return f["field"] != nil && f["values"] != nil
	case "exists":
		return f["field"] != nil
	}
	return false
}

func (s *fakeSocket) setReply(r string) {
	s.mu.Lock()
	s.reply = r
	s.mu.Unlock()
}

func (s *fakeSocket) methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests {
		m, _ := r["method"].(string)
		out = append(out, m)
	}
	return out
}

func (s *fakeSocket) last() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[len(s.requests)-1]
}

func savedChoice(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, visibilityFile))
	if os.IsNotExist(err) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func TestVisibilityActions(t *testing.T) {
	sock := newFakeSocket(t)
	v := Visibility{SocketPath: sock.path, StateDir: filepath.Join(t.TempDir(), "state")}
	ctx := context.Background()
	steps := []struct {
		action     VisibilityAction
		wantHidden bool
		wantMethod string
		wantSaved  string
	}{
		{ActionStartup, true, "agent.view.set", "none"},
		{ActionToggle, false, "agent.view.clear", `{"showSubs":true}`},
		{ActionStartup, false, "agent.view.clear", `{"showSubs":true}`},
		{ActionToggle, true, "agent.view.set", `{"showSubs":false}`},
		{ActionShow, false, "agent.view.clear", `{"showSubs":true}`},
		{ActionShow, false, "agent.view.clear", `{"showSubs":true}`},
		{ActionHide, true, "agent.view.set", `{"showSubs":false}`},
	}
	for i, s := range steps {
		hidden, err := v.Apply(ctx, s.action)
		if err != nil {
			t.Fatalf("step %d %s: %v", i, s.action, err)
		}
		if hidden != s.wantHidden {
			t.Errorf("step %d %s: hidden = %v", i, s.action, hidden)
		}
		if got := sock.methods(); len(got) != i+1 || got[i] != s.wantMethod {
			t.Errorf("step %d %s: requests %v, want %s last", i, s.action, got, s.wantMethod)
		}
		if got := savedChoice(t, v.StateDir); got != s.wantSaved {
			t.Errorf("step %d %s: saved %s, want %s", i, s.action, got, s.wantSaved)
		}
	}
}

func TestVisibilityRequestShape(t *testing.T) {
	sock := newFakeSocket(t)
	v := Visibility{SocketPath: sock.path, StateDir: t.TempDir(), PluginID: "facets.agent-visibility"}
	if _, err := v.Apply(context.Background(), ActionHide); err != nil {
		t.Fatal(err)
	}
	req := sock.last()
	if id, _ := req["id"].(string); !strings.HasPrefix(id, "facets:") {
		t.Errorf("request id = %v", req["id"])
	}
	wantParams := map[string]any{
		"source": "plugin:facets.agent-visibility",
		"label":  "subs hidden",
		"filter": map[string]any{"op": "not", "filter": map[string]any{
			"op": "eq", "field": map[string]any{"token": "facets_role"}, "value": "sub"}},
		"sort": []any{},
	}
	if diff := cmp.Diff(wantParams, req["params"]); diff != "" {
		t.Errorf("agent.view.set params (-want +got):\n%s", diff)
	}
	if _, err := v.Apply(context.Background(), ActionShow); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"source": "plugin:facets.agent-visibility"}, sock.last()["params"]); diff != "" {
		t.Errorf("agent.view.clear params (-want +got):\n%s", diff)
	}
}

func TestVisibilityFailuresKeepTheSavedChoice(t *testing.T) {
	cases := map[string]string{
		"error envelope": `{"id":"x","error":{"code":"invalid_params","message":"bad filter"}}` + "\n",
		"garbage":        "not json\n",
		"wrong type":     `{"id":"x","result":{"type":"ok"}}` + "\n",
		"no answer":      "close",
		"hang":           "hang",
	}
	for name, reply := range cases {
		t.Run(name, func(t *testing.T) {
			sock := newFakeSocket(t)
			sock.setReply(reply)
			v := Visibility{SocketPath: sock.path, StateDir: t.TempDir(), Timeout: 300 * time.Millisecond}
			if _, err := v.Apply(context.Background(), ActionToggle); err == nil {
				t.Fatal("Apply succeeded")
			}
			if got := savedChoice(t, v.StateDir); got != "none" {
				t.Errorf("saved choice changed to %s", got)
			}
		})
	}
}

func TestVisibilityRefusesBadInput(t *testing.T) {
	sock := newFakeSocket(t)
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := (Visibility{StateDir: dir}).Apply(ctx, ActionHide); err == nil || !strings.Contains(err.Error(), "HERDR_SOCKET_PATH") {
		t.Errorf("no socket: %v", err)
	}
	if _, err := (Visibility{SocketPath: sock.path}).Apply(ctx, ActionHide); err == nil || !strings.Contains(err.Error(), "HERDR_PLUGIN_STATE_DIR") {
		t.Errorf("no state dir: %v", err)
	}
	if _, err := (Visibility{SocketPath: sock.path, StateDir: dir}).Apply(ctx, "flip"); err == nil {
		t.Error("unknown action accepted")
	}
	if _, err := (Visibility{SocketPath: filepath.Join(dir, "absent.sock"), StateDir: dir}).Apply(ctx, ActionHide); err == nil {
		t.Error("missing socket accepted")
	}
	if err := os.WriteFile(filepath.Join(dir, visibilityFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Visibility{SocketPath: sock.path, StateDir: dir}).Apply(ctx, ActionToggle); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt state: %v", err)
	}
	if len(sock.methods()) != 0 {
		t.Errorf("bad input still reached Herdr: %v", sock.methods())
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (Visibility{SocketPath: sock.path, StateDir: t.TempDir()}).Apply(ctx, ActionHide); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestVisibilityPluginIDChecks: Herdr refuses a plugin-owned view whose
// plugin is not installed, is disabled, or has an invalid id; the choice
// then stays as it was.
func TestVisibilityPluginIDChecks(t *testing.T) {
	cases := map[string]struct{ id, code string }{
		"not installed": {"someone.else", "plugin_not_found"},
		"disabled":      {"facets.disabled", "plugin_disabled"},
		"invalid id":    {"bad id!", "invalid_agent_view"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sock := newFakeSocket(t)
			sock.plugins["facets.disabled"] = false
			v := Visibility{SocketPath: sock.path, StateDir: t.TempDir(), PluginID: tc.id}
			_, err := v.Apply(context.Background(), ActionHide)
			if err == nil || !strings.Contains(err.Error(), tc.code) {
				t.Errorf("Apply = %v, want %s", err, tc.code)
			}
			if got := savedChoice(t, v.StateDir); got != "none" {
				t.Errorf("saved choice changed to %s", got)
			}
		})
	}
}

package pibridge_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMainStartsServeOnlyWhenNeeded: a Main with no runs spawns one facets
// process at startup (the plan) and starts facets serve with its first
// runtime command; a Main whose session already has a run channel (a
// restart) starts serve at once. Every facets call goes through a logging
// stand-in.
func TestMainStartsServeOnlyWhenNeeded(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply {
		if strings.Contains(req.last().text(), "LIST") && req.last().Role == "user" {
			return reply{Tool: "list_sub", Args: map[string]any{}}
		}
		return reply{Text: "done"}
	})
	e := newPiEnv(t, mock)
	e.profile("worker", map[string]any{"description": "Works", "tools": []string{"read"}})
	standIn, calls := loggingFacets(t, e.facets)
	// Every start spawns its plan here: with the plan daemon (see
	// TestPlanDaemonWithRealPi) a later start spawns none.
	env := []string{"FACETS_BIN=" + standIn, "FACETS_PLAN_DAEMON=0"}
	bridge := []string{"--no-extensions", "-e", e.bridge}

	e.run(env, append(bridge, "--session-id", "facets-lazy-1", "-p", "hello")...)
	if got := calls(); got != "pi-extension plan" {
		t.Errorf("a plain Main ran facets %q, want only the plan", got)
	}
	e.run(env, append(bridge, "--session-id", "facets-lazy-2", "-p", "LIST")...)
	if got := calls(); got != "pi-extension plan\nlist --format\npi-extension serve" {
		t.Errorf("a Main that ran list_sub ran facets %q, want the plan, list, then serve", got)
	}
	workerMessage(t, e, "facets-lazy-3", "Restarted", "late result")
	e.run(env, append(bridge, "--session-id", "facets-lazy-3", "-p", "hello")...)
	if got := calls(); got != "pi-extension plan\npi-extension serve" {
		t.Errorf("a Main with a run channel ran facets %q, want the plan and serve", got)
	}
}

// TestPlanDaemonWithRealPi: the first Pi start spawns its plan, which
// starts the plan daemon; later starts spawn no facets at all and still see
// every edit (the daemon keeps nothing between plans). FACETS_PLAN_DAEMON=0
// spawns again, and after the binary is replaced (an upgrade) the old
// daemon answers nothing: the start spawns the new binary, whose plan
// starts a new daemon.
func TestPlanDaemonWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "done"} })
	e := newPiEnv(t, mock)
	// A copy of its own, so that replacing it touches no other test.
	bin := filepath.Join(t.TempDir(), "facets")
	copyExecutable(t, e.facets, bin)
	e.facets = bin
	e.profile("worker", map[string]any{"description": "Works", "tools": []string{"read"}})
	standIn, calls := loggingFacets(t, bin)
	env := []string{"FACETS_BIN=" + standIn}
	args := []string{"--no-extensions", "-e", e.bridge, "--profile", "worker", "-p", "hello"}
	start := func(extraEnv []string, wantCalls, wantTool, notTool string) {
		t.Helper()
		e.run(append(env, extraEnv...), args...)
		if got := calls(); got != wantCalls {
			t.Errorf("Pi ran facets %q, want %q", got, wantCalls)
		}
		reqs := mock.Requests()
		if len(reqs) == 0 {
			t.Fatal("Pi sent the model nothing")
		}
		tools := reqs[len(reqs)-1].toolNames()
		if !slices.Contains(tools, wantTool) || slices.Contains(tools, notTool) {
			t.Errorf("the profile's tools are %v, want %s and not %s", tools, wantTool, notTool)
		}
	}
	// daemonUp waits until a daemon answers on the socket the extension
	// uses (the plan starts it as it exits, so it may not listen yet).
	daemonUp := func() {
		t.Helper()
		for i := 0; i < 600; i++ {
			socks, _ := filepath.Glob(filepath.Join(e.runtime, "pi-facets-*", "plan-*.sock"))
			for _, s := range socks {
				if c, err := net.Dial("unix", s); err == nil {
					c.Close()
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no plan daemon answers")
	}

	start(nil, "pi-extension plan", "read", "grep")
	daemonUp()
	e.profile("worker", map[string]any{"description": "Works", "tools": []string{"grep"}})
	start(nil, "", "grep", "read")
	start([]string{"FACETS_PLAN_DAEMON=0"}, "pi-extension plan", "grep", "read")

	copyExecutable(t, bin, bin+".new")
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	e.profile("worker", map[string]any{"description": "Works", "tools": []string{"read"}})
	start(nil, "pi-extension plan", "read", "grep")
	daemonUp()
	start(nil, "", "read", "grep")
}

// copyExecutable copies the file at from to a new executable file at to.
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// loggingFacets writes a stand-in for the facets binary bin that logs the
// first two arguments of each call; calls returns the calls since it was
// last called, one per line.
func loggingFacets(t *testing.T, bin string) (standIn string, calls func() string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "calls")
	standIn = filepath.Join(t.TempDir(), "facets")
	writeFile(t, standIn, "#!/bin/sh\necho \"$1 $2\" >> "+strconv.Quote(log)+"\nexec "+strconv.Quote(bin)+" \"$@\"\n")
	if err := os.Chmod(standIn, 0o755); err != nil {
		t.Fatal(err)
	}
	return standIn, func() string {
		data, _ := os.ReadFile(log)
		os.Remove(log)
		return strings.TrimSpace(string(data))
	}
}

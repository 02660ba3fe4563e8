package pibridge_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
	log := filepath.Join(t.TempDir(), "calls")
	standIn := filepath.Join(t.TempDir(), "facets")
	writeFile(t, standIn, "#!/bin/sh\necho \"$1 $2\" >> "+strconv.Quote(log)+"\nexec "+strconv.Quote(e.facets)+" \"$@\"\n")
	if err := os.Chmod(standIn, 0o755); err != nil {
		t.Fatal(err)
	}
	calls := func() string {
		data, _ := os.ReadFile(log)
		os.Remove(log)
		return strings.TrimSpace(string(data))
	}
	env := []string{"FACETS_BIN=" + standIn}
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

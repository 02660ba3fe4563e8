package pibridge_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStaleSnapshotWarningWithRealPi starts real Pi with FACETS_MANIFEST at
// a snapshot: a current one starts silently; after an edit to a source, Pi
// shows exactly one warning line and still applies the snapshot's profile.
func TestStaleSnapshotWarningWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "should not be called"} })
	e := newPiEnv(t, mock)
	e.profile("reviewer", map[string]any{"description": "Frozen description", "tools": []string{"read"}})
	manifest := filepath.Join(e.work, "manifest.json")
	compile := exec.Command(e.facets, "compile", "--out", manifest, "--no-trust")
	compile.Env, compile.Dir = e.env, e.work
	if out, err := compile.CombinedOutput(); err != nil {
		t.Fatalf("facets compile: %v\n%s", err, out)
	}
	isStale := func(ev map[string]any) bool {
		msg, _ := ev["message"].(string)
		return ev["type"] == "extension_ui_request" && ev["method"] == "notify" && strings.HasPrefix(msg, "Facets snapshot ")
	}
	profilesListing := func(pi *piProc, id, want string) []map[string]any {
		pi.send(map[string]any{"id": id, "type": "prompt", "message": "/profiles"})
		pi.response(id)
		var seen []map[string]any
		pi.waitFor("the /profiles listing", 20*time.Second, func(evs []map[string]any) bool {
			for _, ev := range evs {
				if msg, _ := ev["message"].(string); ev["method"] == "notify" && strings.HasPrefix(msg, want) {
					seen = append([]map[string]any(nil), evs...)
					return true
				}
			}
			return false
		})
		return seen
	}

	// Current: the listing comes after startup, so a warning would be in
	// the events by then.
	pi := e.startRPC([]string{"FACETS_MANIFEST=" + manifest}, "--no-extensions", "-e", e.bridge, "--no-session")
	for _, ev := range profilesListing(pi, "p1", "reviewer (global, both) — Frozen description") {
		if isStale(ev) {
			t.Errorf("current snapshot warned: %v", ev["message"])
		}
	}
	pi.stop()

	e.profile("reviewer", map[string]any{"description": "Edited description", "tools": []string{"read"}})
	pi = e.startRPC([]string{"FACETS_MANIFEST=" + manifest}, "--no-extensions", "-e", e.bridge, "--no-session")
	evs := profilesListing(pi, "p2", "reviewer (global, both) — Frozen description")
	var warnings []string
	for _, ev := range evs {
		if isStale(ev) {
			warnings = append(warnings, ev["message"].(string))
			if ev["notifyType"] != "warning" {
				t.Errorf("stale notice level %v, want warning", ev["notifyType"])
			}
		}
	}
	config := filepath.Join(e.agentDir, "facets", "profiles", "reviewer", "config.json")
	if len(warnings) != 1 || strings.Contains(warnings[0], "\n") ||
		!strings.Contains(warnings[0], manifest+" is stale ("+config+": changed since the snapshot") {
		t.Errorf("stale warnings = %q, want one line naming %s", warnings, config)
	}
}

package startup

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/pibridge"
	"github.com/facets-dev/facets/runtime/subs"
)

// TestMainPlanCountsLeftovers: a Main's plan shows one line when the user
// has leftovers (here open runs whose channels a reboot removed), in the
// state dir $FACETS_STATE_DIR names, and none when there are none.
func TestMainPlanCountsLeftovers(t *testing.T) {
	agent, proj, run, state := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(agent, "facets", "profiles", "worker", "config.json"), `{"version":1,"name":"worker","model":"p/m","tools":["read"]}`)
	env := map[string]string{envvar.AgentDir: agent, envvar.Home: t.TempDir(), envvar.XDGRuntimeDir: run, envvar.StateDir: state}
	warnings := func() []string {
		t.Helper()
		c := Call{Role: "main", MainSession: "s", Sources: compiler.Sources{Cwd: proj},
			Extension: pibridge.Peer{Protocol: pibridge.Protocol}, Binary: pibridge.Peer{Protocol: pibridge.Protocol}}
		p := Plan(c, func(*Call) error { return nil }, func(k string) string { return env[k] }, env[envvar.Home])
		if p.Error != "" {
			t.Fatal(p.Error)
		}
		return p.Warnings
	}
	if w := warnings(); len(w) != 0 {
		t.Errorf("warnings without leftovers: %q", w)
	}
	store := subs.Store{Dir: state}
	for i, id := range []string{"r1", "r2", "r3"} {
		r := &subs.Run{Version: subs.RunVersion, RunID: id, MainSessionID: []string{"s", "s", "other"}[i], ChannelDir: filepath.Join(run, "gone", id), CreatedAt: 1}
		if err := store.SaveRun(r); err != nil {
			t.Fatal(err)
		}
	}
	if w := warnings(); !slices.Contains(w, "3 Facets leftovers; run facets gc") {
		t.Errorf("warnings = %q, want the leftover line", w)
	}
	if err := store.DeleteRun("s", "r1"); err != nil {
		t.Fatal(err)
	}
	store.DeleteRun("s", "r2")
	if w := warnings(); !slices.Contains(w, "1 Facets leftover; run facets gc") {
		t.Errorf("warnings = %q, want the one-leftover line", w)
	}
	// A closed run without its channel is how a finished persistent run
	// is kept: not a leftover.
	r, _, _ := store.LoadRun("other", "r3")
	r.ClosedAt = 2
	store.SaveRun(r)
	for _, w := range warnings() {
		if strings.Contains(w, "leftover") {
			t.Errorf("closed run counted: %q", w)
		}
	}
}

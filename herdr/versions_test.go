package herdr

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/fakeherdr"
	"github.com/facets-dev/facets/runtime/surface"
)

// TestHerdrVersions: the adapter drives Herdr 0.8.2 and the 0.9 line
// alike, each as the fake answers in that version's mode, and says so when
// the Herdr it finds is newer than the newest it follows.
func TestHerdrVersions(t *testing.T) {
	cases := []struct {
		name, client, server string
		protocol             int    // what status server must report
		warn                 string // "" when no warning is due
	}{
		{name: "0.8.2", client: fakeherdr.Version082, protocol: 20},
		{name: "0.9.0", client: "0.9.0", protocol: 22},
		{name: "newest modelled", client: fakeherdr.Version09, protocol: 22},
		{name: "0.9 preview", client: "0.9.0-preview.2026-09-09-b9ce9686", protocol: 22},
		// 0.9 lets a client drive a server of another 0.9 release.
		{name: "0.9 client, older 0.9 server", client: fakeherdr.Version09, server: "0.9.0", protocol: 22},
		{name: "newer 0.9", client: "0.9.4", protocol: 22, warn: "Herdr 0.9.4 is newer than 0.9.3"},
		{name: "newer server only", client: "0.9.0", server: "0.9.4", protocol: 22, warn: "Herdr 0.9.4 is newer than 0.9.3"},
		{name: "1.0.0", client: "1.0.0", protocol: 22, warn: "Herdr 1.0.0 is newer than 0.9.3"},
		// A build after a modelled release (BASE-preview.N), and a patch
		// release newer than the one Facets follows of its line, are
		// noted too, naming both.
		{name: "newest modelled preview", client: "0.9.3-preview.4", protocol: 22, warn: "Herdr 0.9.3-preview.4 is newer than 0.9.3"},
		{name: "newer 0.8", client: "0.8.3", protocol: 20, warn: "Herdr 0.8.3 is newer than 0.8.2, the newest 0.8 release"},
		{name: "0.8.2 preview server", client: "0.8.2", server: "0.8.2-preview.1", protocol: 20, warn: "Herdr 0.8.2-preview.1 is newer than 0.8.2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.SetControl(fakeControl{Version: tc.client, ServerVersion: tc.server, ExtraFields: true})
			if out := f.Run("status", "server", "--json"); !strings.Contains(out, `"protocol":`+strconv.Itoa(tc.protocol)) {
				t.Fatalf("the fake's status server = %s, want protocol %d", out, tc.protocol)
			}
			ctx := context.Background()
			notes, err := f.cli.Check(ctx)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			switch {
			case tc.warn == "" && len(notes) != 0:
				t.Errorf("Check noted %q, want no warning", notes)
			case tc.warn != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.warn) || strings.Contains(notes[0], "\n")):
				t.Errorf("Check noted %q, want one line saying %q", notes, tc.warn)
			}
			if tc.name == "newer 0.9" && len(notes) == 1 {
				// docs/herdr.md shows this note as the user sees it.
				doc, err := os.ReadFile("../docs/herdr.md")
				if err != nil || !strings.Contains(string(doc), "\n"+notes[0]+"\n") {
					t.Errorf("docs/herdr.md does not show the note as Check words it: %q", notes[0])
				}
			}
			h, err := f.cli.CreateTab(ctx, TabSpec{Cwd: t.TempDir(), Title: "versions"})
			if err != nil {
				t.Fatalf("CreateTab: %v", err)
			}
			if err := f.cli.ReportMetadata(ctx, h, Metadata{MainSession: "m", RunID: testRunID, Profile: "p"}); err != nil {
				t.Fatalf("ReportMetadata: %v", err)
			}
			if h, err = f.cli.StartAgent(ctx, h, AgentSpec{Name: surface.AgentName(testRunID)}); err != nil {
				t.Fatalf("StartAgent: %v", err)
			}
			if _, err := f.cli.Prompt(ctx, h, "hello"); err != nil {
				t.Fatalf("Prompt: %v", err)
			}
			if _, err := f.cli.State(ctx, h); err != nil {
				t.Fatalf("State: %v", err)
			}
			if ex, err := f.cli.Owned(ctx, h, testRunID); ex != TabPresent || err != nil {
				t.Fatalf("Owned = %v, %v", ex, err)
			}
			if err := f.cli.CloseTab(ctx, h); err != nil {
				t.Fatalf("CloseTab: %v", err)
			}
			if ex, err := f.cli.TabExists(ctx, h.TabID); ex != TabGone || err != nil {
				t.Fatalf("TabExists after close = %v, %v", ex, err)
			}
		})
	}
}

// TestHerdrAcrossLines: a 0.9 herdr refuses a 0.8 server and 0.8.2 a 0.9
// server (another wire protocol), so Check refuses the pair, naming both
// versions, before any tab is opened.
func TestHerdrAcrossLines(t *testing.T) {
	for _, tc := range []struct{ client, server string }{
		{fakeherdr.Version09, fakeherdr.Version082},
		{fakeherdr.Version082, fakeherdr.Version09},
	} {
		t.Run(tc.client+" against "+tc.server, func(t *testing.T) {
			f := newFixture(t)
			f.SetControl(fakeControl{Version: tc.client, ServerVersion: tc.server})
			_, err := f.cli.Check(context.Background())
			if err == nil {
				t.Fatal("Check succeeded")
			}
			want := "herdr " + tc.client + " cannot drive the running Herdr " + tc.server + " server"
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Check = %v; want it to say %q", err, want)
			}
			if got := f.Commands(); !slices.Equal(got, []string{"--version", "status server"}) {
				t.Errorf("calls = %v, want only the checks", got)
			}
			// herdr itself refuses the pair too.
			if _, err := f.cli.CreateTab(context.Background(), TabSpec{Cwd: t.TempDir(), Title: "x"}); !hasCode(err, "protocol_mismatch") {
				t.Errorf("CreateTab = %v, want protocol_mismatch", err)
			}
		})
	}
}

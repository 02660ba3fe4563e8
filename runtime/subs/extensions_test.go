package subs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/launch"
)

// withTool returns a copy of the example manifest in which profile also
// lists tool; the shared manifest is left alone.
func (f *fixture) withTool(profile, tool string) *manifest.Manifest {
	f.tb.Helper()
	m := *f.manifest
	m.Profiles = slices.Clone(m.Profiles)
	for i, p := range m.Profiles {
		if p.Name == profile {
			m.Profiles[i].Launch.Tools = append(slices.Clone(p.Launch.Tools), tool)
			return &m
		}
	}
	f.tb.Fatalf("profile %s not in the example manifest", profile)
	return nil
}

// mainTools is a Main Pi's tool provenance: Pi's native tools plus
// web_search from the given extension (with the given source).
func mainTools(ext, source string) map[string]launch.ToolSource {
	tools := map[string]launch.ToolSource{"web_search": {Path: ext, Source: source}}
	for _, n := range []string{"read", "bash", "edit", "write", "grep", "find", "ls"} {
		tools[n] = launch.ToolSource{Path: "builtin:" + n, Source: "builtin"}
	}
	return tools
}

func writeExtension(t *testing.T) string {
	t.Helper()
	ext := filepath.Join(t.TempDir(), "web.ts")
	if err := os.WriteFile(ext, []byte("export default () => {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ext
}

func TestDelegateLoadsToolExtensions(t *testing.T) {
	f := newFixture(t)
	m := f.withTool("writer", "web_search")
	ext := writeExtension(t)
	d, err := f.runtime().Delegate(context.Background(), DelegateRequest{
		Manifest: m, MainSessionID: mainID, Profile: "writer", Title: "Search", Task: "search",
		ToolSources: mainTools(ext, "local"),
	})
	if err != nil {
		t.Fatal(err)
	}
	p := profileNamed(t, m, "writer")
	p.Launch.Extensions = []string{ext}
	want := launch.Spec{Profile: p, Bridge: testBridge, Trusted: true, Title: "Search"}.Args()
	got := f.pane(d.RunID).Agent.Args
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pi args (-want +got):\n%s", diff)
	}
	if i := slices.Index(got, ext); i < 1 || got[i-1] != "-e" {
		t.Errorf("pi args lack -e %s: %q", ext, got)
	}
	var snapshot struct {
		Tools              []string `json:"tools"`
		ResolvedExtensions []string `json:"resolvedExtensions"`
	}
	if err := json.Unmarshal(f.sub(d.RunID).Manifest().Profile, &snapshot); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ext}, snapshot.ResolvedExtensions); diff != "" {
		t.Errorf("channel manifest resolvedExtensions (-want +got):\n%s", diff)
	}
	if !slices.Contains(snapshot.Tools, "web_search") {
		t.Errorf("channel manifest tools = %q", snapshot.Tools)
	}
}

func TestUnloadableToolLaunchesNothing(t *testing.T) {
	ext := writeExtension(t)
	cases := map[string]struct {
		sources map[string]launch.ToolSource
		want    string
	}{
		"sdk":         {mainTools(ext, "sdk"), "Profile 'writer' tool 'web_search' cannot be loaded in an isolated Sub process."},
		"missing":     {mainTools(ext+".gone", "local"), "Profile 'writer' tool 'web_search' extension is missing: " + ext + ".gone."},
		"unavailable": {map[string]launch.ToolSource{}, "Profile 'writer' references unavailable tool 'read'."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			m := f.withTool("writer", "web_search")
			rt := f.runtime()
			_, derr := rt.Delegate(context.Background(), DelegateRequest{
				Manifest: m, MainSessionID: mainID, Profile: "writer", Title: "Search", Task: "search", ToolSources: tc.sources,
			})
			_, ierr := rt.Invoke(context.Background(), DelegateRequest{Manifest: m, MainSessionID: mainID, Profile: "writer", ToolSources: tc.sources})
			for op, err := range map[string]error{"delegate": derr, "invoke": ierr} {
				if err == nil || err.Error() != tc.want {
					t.Errorf("%s error = %v, want %q", op, err, tc.want)
				}
			}
			if cmds := f.commands(); len(cmds) != 0 {
				t.Errorf("herdr was called: %q", cmds)
			}
			if got := f.openRuns(mainID); len(got) != 0 {
				t.Errorf("runs after a refused launch: %v", got)
			}
			if entries, _ := os.ReadDir(filepath.Join(f.dir, "run", channel.Safe(mainID))); len(entries) != 0 {
				t.Errorf("channels after a refused launch: %d", len(entries))
			}
		})
	}
}

func TestInvokeLoadsToolExtensions(t *testing.T) {
	f := newFixture(t)
	m := f.withTool("review", "web_search")
	ext := writeExtension(t)
	d, err := f.runtime().Invoke(context.Background(), DelegateRequest{
		Manifest: m, MainSessionID: mainID, Profile: "review", Task: "look", ToolSources: mainTools(ext, "npm:pi-web-access"),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := f.pane(d.RunID).Agent.Args
	if i := slices.Index(got, ext); i < 1 || got[i-1] != "-e" {
		t.Errorf("pi args lack -e %s: %q", ext, got)
	}
	// The bound Sub is open: a later command whose tools cannot reach a Sub
	// is refused before anything is queued.
	_, err = f.runtime().Invoke(context.Background(), DelegateRequest{
		Manifest: m, MainSessionID: mainID, Profile: "review", Task: "again", ToolSources: mainTools(ext, "sdk"),
	})
	if want := "Profile 'review' tool 'web_search' cannot be loaded in an isolated Sub process."; err == nil || err.Error() != want {
		t.Errorf("second invoke error = %v, want %q", err, want)
	}
	if msgs, _, err := f.sub(d.RunID).Pending(channel.ToSub); err != nil || len(msgs) != 0 {
		t.Errorf("queued after a refused invoke: %d messages (%v)", len(msgs), err)
	}
}

package launch

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/exampletest"
	"github.com/facets-dev/facets/internal/golden"
)

// exampleManifest compiles testdata/example from the service directory,
// the same tree `facets compile` is documented with.
func exampleManifest(t *testing.T, trusted bool) (*manifest.Manifest, string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	m := exampletest.Manifest(t, filepath.Join(root, "testdata", "example"), trusted)
	return m, root
}

func profile(t *testing.T, m *manifest.Manifest, name string) manifest.Profile {
	t.Helper()
	for _, p := range m.Profiles {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("profile %s not in the example manifest", name)
	return manifest.Profile{}
}

// render prints argv one argument a line, then the tab environment, then
// the channel profile snapshot, with the checkout path replaced by $ROOT.
func render(t *testing.T, s Spec, root string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# argv\n")
	for _, a := range s.Args() {
		b.WriteString(a + "\n")
	}
	b.WriteString("# env\n")
	for _, v := range Env("/run/user/1000/pi-facets-1000/main-1/run-1") {
		b.WriteString(v.Name + "=" + v.Value + "\n")
	}
	b.WriteString("# profile\n")
	raw, err := ResolvedProfile(s.Profile)
	if err != nil {
		t.Fatal(err)
	}
	// Indent, not re-marshal, so the golden file pins the on-disk key order.
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	b.Write(out.Bytes())
	b.WriteString("\n")
	return strings.ReplaceAll(b.String(), root, "$ROOT")
}

func TestArgsGolden(t *testing.T) {
	trusted, root := exampleManifest(t, true)
	untrusted, _ := exampleManifest(t, false)
	bridge := filepath.Join(root, "pi", "facets-bridge.ts")
	withExtensions := profile(t, trusted, "writer")
	// A profile whose tools come from extensions, one of them the bridge
	// itself and one a built-in, so deduplication and exclusion show.
	withExtensions.Launch.Extensions = []string{"/ext/notes/index.ts", bridge, "builtin:mcp", "/ext/notes/index.ts"}
	withExtensions.Launch.Tools = []string{"read", "notes_add", "mcp__github__search", "read_mcp_resource", "talk"}
	cases := []struct {
		name string
		spec Spec
	}{
		{"directory-private-skills", Spec{Profile: profile(t, trusted, "writer"), Trusted: true, Title: "Write the\tREADME"}},
		{"legacy", Spec{Profile: profile(t, trusted, "oracle"), Trusted: true, Title: "Advise on caching"}},
		{"persistent", Spec{Profile: profile(t, trusted, "reviewer"), Trusted: true, Title: "Review auth"}},
		{"persistent-resume", Spec{Profile: profile(t, trusted, "reviewer"), Trusted: true, Title: "Review auth", ResumeSessionID: "01a23691-5335-728a-a586-7a9ed45956d1"}},
		{"manual", Spec{Profile: profile(t, trusted, "review"), Trusted: true, Title: "review", Manual: true}},
		{"untrusted-global-private-and-named-skills", Spec{Profile: profile(t, untrusted, "reviewer"), Trusted: false, Title: strings.Repeat("long title ", 8)}},
		{"extensions-and-herdr-agent-state", Spec{Profile: withExtensions, Trusted: true, Title: "Notes", HerdrAgentState: "/agent/extensions/herdr-agent-state.ts"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Bridge = bridge
			got := render(t, c.spec, root)
			path := filepath.Join("testdata", "golden", c.name+".txt")
			golden.Check(t, path, []byte(got))
		})
	}
}

func TestManualTask(t *testing.T) {
	got := ManualTask("review", "  Review MR 42 ")
	want := "[User-invoked profile: review]\nThe user explicitly requests this task:\nReview MR 42"
	if got != want {
		t.Errorf("ManualTask = %q, want %q", got, want)
	}
	if got := ManualTask("review", " "); !strings.HasSuffix(got, "\n"+DefaultManualTask) {
		t.Errorf("empty task not defaulted: %q", got)
	}
}

func TestIsMCPTool(t *testing.T) {
	for name, want := range map[string]bool{"mcp__x__y": true, "read_mcp_resource": true, "list_mcp_resources": true,
		"list_mcp_resource_templates": true, "read": false, "mcp_x": false, "talk": false} {
		if IsMCPTool(name) != want {
			t.Errorf("IsMCPTool(%q) = %v", name, !want)
		}
	}
}

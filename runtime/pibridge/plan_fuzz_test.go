package pibridge

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/facets-dev/facets/runtime/launch"
)

// FuzzSubPlan feeds SubPlan the profile snapshot of a channel manifest. It
// must never panic; a plan it cannot build blocks input with an error; a
// built plan gives the Sub exactly the snapshot's non-MCP tools, each once,
// plus talk, and its instructions under the profile's name.
func FuzzSubPlan(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"name":"review","tools":["read","grep"],"instructions":"Review it.","source":"global","sourcePath":"/p","resolvedSkills":[],"resolvedExtensions":[]}`,
		`{"name":"r","tools":["read","read","mcp__x__y","list_mcp_resources","talk"]}`,
		`{"name":"r","tools":["mcp__only"]}`,
		`{"name":"r","tools":[]}`, `{"name":"","tools":["read"]}`, `{"name":"r","tools":[1]}`,
		`{"name":"r","tools":null,"instructions":"\u0000"}`, `null`, `[]`, ``,
	} {
		f.Add([]byte(seed), "")
	}
	f.Add([]byte(`{"name":"r","tools":["read"]}`), "manual")
	f.Fuzz(func(t *testing.T, raw []byte, origin string) {
		p := SubPlan(json.RawMessage(raw), origin)
		if p.Role != "sub" {
			t.Fatalf("role %q", p.Role)
		}
		if p.Error != "" {
			return
		}
		var sp subProfile
		if err := json.Unmarshal(raw, &sp); err != nil || sp.Name == "" || p.Profile == nil || p.Profile.Name != sp.Name {
			t.Fatalf("plan built from a snapshot it cannot read: %q -> %+v", raw, p.Profile)
		}
		var want []string
		for _, tool := range append(sp.Tools, "talk") {
			if !launch.IsMCPTool(tool) && !slices.Contains(want, tool) {
				want = append(want, tool)
			}
		}
		if !slices.Equal(p.Profile.Tools, want) {
			t.Fatalf("tools %q from %q, want %q", p.Profile.Tools, sp.Tools, want)
		}
		if sec := p.Sections[SectionProfile]; sp.Instructions != "" && (!strings.Contains(sec, sp.Name) || !strings.HasSuffix(sec, sp.Instructions)) {
			t.Fatalf("profile section %q lacks name %q or instructions", sec, sp.Name)
		}
	})
}

package profiles

import (
	"slices"
	"strings"
	"testing"
)

// TestConvertClaudeAgentNeverWidens: an imported role never gets more than
// the agent had (no tools line means Pi's defaults), what the agent was
// denied stays denied, and a value that would change the file's shape is
// dropped, not written.
func TestConvertClaudeAgentNeverWidens(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		skipped   bool
		want      []string // lines the role file has
		not       []string // text it must not have
	}{
		{"an empty tool list", "---\nname: a\ndescription: d\ntools: []\n---\nB\n", true, nil, nil},
		{"only tools Pi lacks", "---\nname: a\ndescription: d\ntools: WebFetch, WebSearch\n---\nB\n", true, nil, nil},
		{"disallowed tools", "---\nname: a\ndescription: d\ndisallowedTools: Write, Edit, Bash\n---\nB\n", false,
			[]string{"deny-tools: bash, edit, write"}, nil},
		{"plan mode is read-only", "---\nname: a\ndescription: d\ntools: Read, Bash\npermissionMode: plan\n---\nB\n", false,
			[]string{"tools: read, bash", "deny-tools: bash, edit, write"}, []string{"permissionMode"}},
		{"a model that would add lines", "---\nname: a\ndescription: d\nmodel: \"openai/gpt\\n---\\ninjected\"\n---\nB\n", false,
			nil, []string{"injected", "model:"}},
		{"a model with a YAML indicator", "---\nname: a\ndescription: d\nmodel: \"[openai/x]\"\n---\nB\n", false, nil, []string{"model:"}},
		{"an MCP tool name that would add lines", "---\nname: a\ndescription: d\ntools:\n  - Read\n  - \"mcp__x\\n---\"\n---\nB\n", false,
			[]string{"tools: read"}, []string{"mcp__x"}},
	} {
		r := ConvertClaudeAgent("a", []byte(tc.src), map[string]string{"sonnet": "p/m"})
		if (r.Skipped != "") != tc.skipped {
			t.Errorf("%s: skipped %q, want skipped %v", tc.name, r.Skipped, tc.skipped)
			continue
		}
		lines := strings.Split(string(r.Data), "\n")
		for _, w := range tc.want {
			if !slices.Contains(lines, w) {
				t.Errorf("%s: no line %q in\n%s", tc.name, w, r.Data)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(string(r.Data), n) {
				t.Errorf("%s: %q written in\n%s", tc.name, n, r.Data)
			}
		}
	}
}

// Claude Code's isolation: worktree has no role field; the note says where
// facets offers the same (a profile's workspace).
func TestClaudeIsolationWorktreeNote(t *testing.T) {
	r := ConvertClaudeAgent("a", []byte("---\nname: a\ndescription: d\ntools: Read, Edit\nisolation: worktree\n---\nB\n"), nil)
	want := `isolation: worktree (a role has no workspace; a facets profile with "workspace": "worktree" gives each of its Subs its own git worktree)`
	if !slices.Contains(r.Dropped, want) || strings.Contains(string(r.Data), "isolation") {
		t.Errorf("dropped %q\n%s", r.Dropped, r.Data)
	}
}

package profiles

import (
	"strings"
	"testing"
)

// FuzzConvertClaudeAgent: any agent file converts without a panic, and a
// converted one is a role file with frontmatter, a valid name, a one-line
// description and the body unchanged.
func FuzzConvertClaudeAgent(f *testing.F) {
	for _, s := range []string{
		"---\nname: r\ndescription: \"a\\nb: c\"\ntools: Read, Glob\nmodel: sonnet\ncolor: red\n---\nBody\n",
		"---\nname: p\ntools:\n  - Bash\n  - mcp__x__y\nmodel: inherit\n---\n",
		"---\ndescription: Finds. Use when: lost\n---\nx",
		"---\nname: ../x\ndescription: '#1'\n---\n",
		"no frontmatter",
	} {
		f.Add("stem", []byte(s))
	}
	f.Fuzz(func(t *testing.T, stem string, data []byte) {
		r := ConvertClaudeAgent(stem, data, map[string]string{"sonnet": "p/m"})
		if r.Skipped != "" {
			return
		}
		if !ValidName(r.Name) {
			t.Fatalf("invalid role name %q", r.Name)
		}
		yaml, _, body, ok := SplitFrontmatter(r.Data)
		if !ok {
			t.Fatalf("no frontmatter in %q", r.Data)
		}
		if d, _, ok := FrontmatterLine(yaml, "description"); !ok || strings.ContainsAny(d, "\n\r") {
			t.Fatalf("description %q", d)
		}
		_, _, src, _ := SplitFrontmatter(data)
		if strings.TrimRight(body, "\n") != strings.TrimRight(src, "\n") {
			t.Fatalf("body %q, want %q", body, src)
		}
	})
}

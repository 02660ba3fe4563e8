package lsp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/facets-dev/facets/profiles"
)

// at splits a document written with one | marking the cursor into the
// text and the cursor's LSP position.
func at(t *testing.T, marked string) (string, position) {
	t.Helper()
	i := strings.Index(marked, "|")
	if i < 0 {
		t.Fatalf("no cursor in %q", marked)
	}
	text := marked[:i] + marked[i+1:]
	return text, newLineIndex(text).positionAt(i)
}

func labels(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var l completionList
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Label)
	}
	return out
}

func TestCompletion(t *testing.T) {
	tr := newTree(t, map[string]string{
		"agent/skills/review/SKILL.md":                  "---\nname: review\n---\n",
		"agent/skills/notes.md":                         "notes",
		"agent/facets/profiles/p/skills/check/SKILL.md": "x",
		"agent/facets/profiles/p/skills/tips.md":        "x",
		"agent/facets/profiles/p/skills/more/deep.md":   "x",
		"agent/facets/shared/review.md":                 "x",
	})
	cfg := tr.path("agent/facets/profiles/p/config.json")
	role := tr.path("agent/agents/r.md")
	c := startServer(t, tr.config())
	c.initialize(tr.path("proj"))
	for _, tc := range []struct {
		name, path, marked string
		want               []string // labels that must be offered
		not                []string // labels that must not be
	}{
		{"profile keys", cfg, "{\n  \"version\": 1,\n  |\n}", []string{"name", "tools", "invocation", "sessionPersistence", "thinkingLevel"}, []string{"version"}},
		{"profile key in quotes", cfg, "{\"name\": \"p\", \"inv|\"}", []string{"invocation"}, []string{"name"}},
		{"keys after the cursor count", cfg, "{|\n\"tools\": [\"read\"]}", []string{"name"}, []string{"tools"}},
		{"invocation values", cfg, `{"invocation": "|"}`, []string{"both", "manual"}, []string{"name"}},
		{"sessionPersistence values", cfg, `{"sessionPersistence": |}`, []string{"ephemeral", "persistent"}, nil},
		{"workspace values", cfg, `{"workspace": "|"}`, []string{"shared", "worktree"}, []string{"name"}},
		{"thinkingLevel values", cfg, `{"thinkingLevel": "h|"}`, []string{"off", "high", "xhigh", "max"}, nil},
		{"tool names", cfg, `{"tools": ["read", "|"]}`, []string{"read", "bash", "edit", "grep"}, nil},
		{"skill names", cfg, `{"skills": [|]}`, []string{"review", "notes"}, nil},
		{"skill paths", cfg, `{"skills": ["./skills/|"]}`, []string{"./skills/check", "./skills/tips.md", "./skills/more/"}, []string{"review", "./skills/check/"}},
		{"skill paths up", cfg, `{"skills": ["../../sha|"]}`, []string{"../../shared/"}, nil},
		{"nothing in a nested value", cfg, `{"tools": [{"|"}]}`, nil, []string{"read", "name"}},
		{"role keys", role, "---\nname: r\n|\n---\nBody\n", []string{"description", "thinking", "tools", "spawning"}, []string{"name"}},
		{"role thinking", role, "---\nthinking: |\n---\n", []string{"off", "minimal", "max"}, nil},
		{"role bool", role, "---\nspawning: |\n---\n", []string{"true", "false"}, nil},
		{"role tools list", role, "---\ntools: read, |\n---\n", []string{"bash", "grep"}, nil},
		{"role skills", role, "---\nskills: |\n---\n", []string{"review", "notes"}, nil},
		{"role body", role, "---\nname: r\n---\n|\n", nil, []string{"description"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, pos := at(t, tc.marked)
			c.open(tc.path, text)
			raw, rerr := c.request("textDocument/completion", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: pathURI(tc.path)}, Position: pos})
			if rerr != nil {
				t.Fatal(rerr.Message)
			}
			got := labels(t, raw)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%q not offered; got %v", w, got)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(got, n) {
					t.Errorf("%q offered; got %v", n, got)
				}
			}
		})
	}
	c.stop()
}

// TestCompletionEdits checks what accepting an item writes: a key in
// quotes is replaced whole, a role value from the item's start.
func TestCompletionEdits(t *testing.T) {
	tr := newTree(t, nil)
	cfg := tr.path("agent/facets/profiles/p/config.json")
	role := tr.path("agent/agents/r.md")
	c := startServer(t, tr.config())
	c.initialize("")
	apply := func(path, marked, label string) string {
		t.Helper()
		text, pos := at(t, marked)
		c.open(path, text)
		raw, _ := c.request("textDocument/completion", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: pathURI(path)}, Position: pos})
		var l completionList
		json.Unmarshal(raw, &l)
		for _, it := range l.Items {
			if it.Label != label {
				continue
			}
			if it.TextEdit == nil {
				x := newLineIndex(text)
				o := x.offset(pos)
				return text[:o] + it.InsertText + text[o:]
			}
			x := newLineIndex(text)
			return text[:x.offset(it.TextEdit.Range.Start)] + it.TextEdit.NewText + text[x.offset(it.TextEdit.Range.End):]
		}
		t.Fatalf("no item %q", label)
		return ""
	}
	for _, tc := range []struct{ path, marked, label, want string }{
		{cfg, `{"inv|"}`, "invocation", `{"invocation"}`},
		{cfg, "{\n  |\n}", "tools", "{\n  \"tools\": \n}"},
		{cfg, `{"invocation": "ma|"}`, "manual", `{"invocation": "manual"}`},
		{cfg, `{"invocation": |}`, "manual", `{"invocation": "manual"}`},
		{cfg, `{"version": |}`, "1", `{"version": 1}`},
		{role, "---\nthi|\n---\n", "thinking", "---\nthinking: \n---\n"},
		{role, "---\ntools: read, gr|\n---\n", "grep", "---\ntools: read, grep\n---\n"},
		{role, "---\ndescription: ✓ 😀\nthinking: hi|\n---\n", "high", "---\ndescription: ✓ 😀\nthinking: high\n---\n"},
	} {
		if got := apply(tc.path, tc.marked, tc.label); got != tc.want {
			t.Errorf("%q + %s: got %q, want %q", tc.marked, tc.label, got, tc.want)
		}
	}
	c.stop()
}

func TestHover(t *testing.T) {
	tr := newTree(t, nil)
	cfg := tr.path("agent/facets/profiles/p/config.json")
	legacy := tr.path("agent/facets/profiles/q.json")
	role := tr.path("agent/agents/r.md")
	other := tr.path("proj/package.json")
	c := startServer(t, tr.config())
	c.initialize("")
	for _, tc := range []struct {
		path, marked string
		want         []string // substrings of the hover; none means no hover
	}{
		{cfg, `{"invo|cation": "both"}`, []string{"**invocation**", "Who may start the profile", "`both`, `manual`"}},
		{cfg, `{"work|space": "worktree"}`, []string{"**workspace**", "its own git worktree on a new branch", "`shared`, `worktree`"}},
		{cfg, `{"invocation": "bo|th"}`, []string{"**invocation**"}},
		{legacy, `{"tools": ["re|ad"]}`, []string{"**tools** (list, required)", "Non-MCP tools"}},
		{cfg, `{"nosuch|": 1}`, nil},
		{role, "---\nthink|ing: high\n---\n", []string{"**thinking**", "Thinking level", "`xhigh`"}},
		{role, "---\nthinking: high\n---\nthink|ing: body\n", nil},
		{other, `{"na|me": "x"}`, nil},
	} {
		text, pos := at(t, tc.marked)
		c.open(tc.path, text)
		raw, rerr := c.request("textDocument/hover", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: pathURI(tc.path)}, Position: pos})
		if rerr != nil {
			t.Fatal(rerr.Message)
		}
		if tc.want == nil {
			if string(raw) != "null" {
				t.Errorf("%q: hover %s, want null", tc.marked, raw)
			}
			continue
		}
		var h hover
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatalf("%q: %v (%s)", tc.marked, err, raw)
		}
		for _, w := range tc.want {
			if !strings.Contains(h.Contents.Value, w) {
				t.Errorf("%q: hover %q lacks %q", tc.marked, h.Contents.Value, w)
			}
		}
	}
	c.stop()
}

// TestSkillPathsResolve: every skill path offered (not a directory to
// descend into) is one the compiler resolves.
func TestSkillPathsResolve(t *testing.T) {
	tr := newTree(t, map[string]string{
		"agent/facets/profiles/p/skills/check/SKILL.md": "x",
		"agent/facets/profiles/p/skills/tips.md":        "x",
		"agent/facets/profiles/p/skills/notes.txt":      "x",
		"agent/facets/profiles/p/skills/more/deep.md":   "x",
	})
	base := tr.path("agent/facets/profiles/p")
	var offered []string
	for _, typed := range []string{"./", "./skills/", "./skills/more/", "skills/t"} {
		for _, p := range skillPaths(base, typed) {
			if strings.HasSuffix(p, "/") {
				continue
			}
			offered = append(offered, p)
			if _, ok := profiles.ResolveSkill(p, base, tr.opts.Env, true); !ok {
				t.Errorf("offered %q does not resolve", p)
			}
		}
	}
	want := []string{"./skills/check", "./skills/tips.md", "./skills/more/deep.md", "skills/check", "skills/tips.md"}
	if !slices.Equal(offered, want) {
		t.Errorf("offered %v, want %v", offered, want)
	}
}

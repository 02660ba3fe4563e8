package cue

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/internal/golden"
)

type roleFinding struct {
	Code, Field  string
	Line, Column int
}

// roleCases are role frontmatter documents with the findings #Role must
// produce. Documents start on line 2 of their Markdown file, after "---".
var roleCases = []struct {
	name string
	yaml string
	want []roleFinding
}{
	{"all fields valid", "name: reviewer\ndescription: Reviews code\nmodel: anthropic/claude-sonnet-4, openai/gpt-5\nthinking: high\n" +
		"tools: read, bash\nskills: review, lint\nskill: legacy\ndeny-tools: subagent\nspawning: false\nauto-exit: true\n" +
		"interactive: false\npersistent: true\nsystem-prompt: append\nsession-mode: lineage-only\ncwd: work\n" +
		"disable-model-invocation: true\n", nil},
	{"model with nested slash", "model: openrouter/anthropic/claude\n", nil},
	{"name pattern", "name: -bad name\n", []roleFinding{{"invalid-value", "name", 2, 7}}},
	{"blank description", "description: \"  \"\n", []roleFinding{{"invalid-value", "description", 2, 14}}},
	{"model without provider", "model: sonnet\n", []roleFinding{{"invalid-value", "model", 2, 8}}},
	{"model empty fallback entry", "model: a/b,,c/d\n", []roleFinding{{"invalid-value", "model", 2, 8}}},
	{"thinking enum", "thinking: huge\n", []roleFinding{{"invalid-value", "thinking", 2, 11}}},
	{"tools yaml list", "tools:\n  - read\n  - bash\n", []roleFinding{{"invalid-value", "tools", 3, 3}}},
	{"tools flow list", "tools: [read, bash]\n", []roleFinding{{"invalid-value", "tools", 2, 8}}},
	{"tools empty item", "tools: read, , bash\n", []roleFinding{{"invalid-value", "tools", 2, 8}}},
	{"tools trailing comma", "tools: read,\n", []roleFinding{{"invalid-value", "tools", 2, 8}}},
	{"skills number", "skills: 3\n", []roleFinding{{"invalid-value", "skills", 2, 9}}},
	{"spawning yes", "spawning: yes\n", []roleFinding{{"invalid-value", "spawning", 2, 11}}},
	{"persistent number", "persistent: 1\n", []roleFinding{{"invalid-value", "persistent", 2, 13}}},
	{"cwd blank", "cwd: \"\"\n", []roleFinding{{"invalid-value", "cwd", 2, 6}}},
	{"cwd null", "cwd:\n", []roleFinding{{"invalid-value", "cwd", 2, 5}}},
	{"unknown keys", "output: file\nclli: claude\n", []roleFinding{{"unknown-field", "output", 2, 1}, {"unknown-field", "clli", 3, 1}}},
	{"unknown and invalid together", "thinking: loud\nextra: 1\n",
		[]roleFinding{{"invalid-value", "thinking", 2, 11}, {"unknown-field", "extra", 3, 1}}},
	// Reported once: unifying a/b with c/d is no error of either value.
	{"duplicate key", "model: a/b\nmodel: c/d\n", []roleFinding{{"duplicate-key", "model", 3, 1}}},
	{"duplicate list key", "tools: read\ntools: bash\nthinking: high\n", []roleFinding{{"duplicate-key", "tools", 3, 1}}},
	{"not a mapping", "- a\n- b\n", []roleFinding{{"not-object", "", 2, 1}}},
	{"bad utf-8", "description: ok\nmodel: a/\xff\n", []roleFinding{{"encoding", "", 3, 10}}},
}

// hyphenCases have invalid values under keys that are not CUE identifiers,
// which CUE quotes in error paths (e.g. "\"auto-exit\""); validate.go
// unquotes them, so each document yields exactly the finding listed.
var hyphenCases = []struct {
	name string
	yaml string
	want roleFinding
}{
	{"deny-tools brace", "deny-tools: \"{a}\"\n", roleFinding{"invalid-value", "deny-tools", 2, 13}},
	{"auto-exit string", "auto-exit: \"true\"\n", roleFinding{"invalid-value", "auto-exit", 2, 12}},
	{"system-prompt enum", "system-prompt: prepend\n", roleFinding{"invalid-value", "system-prompt", 2, 16}},
	{"session-mode enum", "session-mode: detached\n", roleFinding{"invalid-value", "session-mode", 2, 15}},
	{"disable-model-invocation string", "disable-model-invocation: sure\n", roleFinding{"invalid-value", "disable-model-invocation", 2, 27}},
}

func TestRoleFindingsHyphenatedKeys(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range hyphenCases {
		res := s.ValidateFrontmatter(Role, "role.md", []byte(tc.yaml), 2)
		if res.OK() {
			t.Errorf("%s: accepted an invalid value", tc.name)
		}
		var got []roleFinding
		for _, f := range res.Findings {
			got = append(got, roleFinding{f.Code, f.Field, f.Line, f.Column})
		}
		if diff := cmp.Diff([]roleFinding{tc.want}, got); diff != "" {
			t.Errorf("%s: findings mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestRoleFindings checks codes, fields and positions for each case, and
// compares the full rendered findings (messages and hints) with
// testdata/role-findings.golden.
func TestRoleFindings(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	for _, tc := range roleCases {
		res := s.ValidateFrontmatter(Role, "role.md", []byte(tc.yaml), 2)
		var got []roleFinding
		fmt.Fprintf(&report, "# %s\n", tc.name)
		for _, f := range res.Findings {
			got = append(got, roleFinding{f.Code, f.Field, f.Line, f.Column})
			fmt.Fprintf(&report, "%s:%d:%d: %s [%s] %s\n\thint: %s\n", f.File, f.Line, f.Column, f.Code, f.Field, f.Message, f.Hint)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: findings mismatch (-want +got):\n%s", tc.name, diff)
		}
		if res.OK() != (len(tc.want) == 0) {
			t.Errorf("%s: OK() = %v with %d findings", tc.name, res.OK(), len(tc.want))
		}
	}
	path := filepath.Join("testdata", "role-findings.golden")
	golden.Check(t, path, []byte(report.String()))
}

// TestValuePassSeesOnlyAllowedKeys: CUE evaluates only the keys the
// structural pass left standing. Given unknown keys, CUE's closedness
// errors grow quadratically (20k keys took 12 s to check); given a
// duplicated key, it adds a conflict no single value has.
// BenchmarkRoleManyKeys (package compiler) shows the cost is linear.
func TestValuePassSeesOnlyAllowedKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("description: kept\nmodel: a/b\nmodel: c/d\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&b, "unknown-%d: v\n", i)
	}
	s := &Schema{slowOnly: true}
	res := s.ValidateFrontmatter(Role, "r.md", []byte(b.String()), 2)
	if n := len(res.Findings); n != 51 {
		t.Fatalf("%d findings, want 50 unknown keys and 1 duplicate; the first: %v", n, res.Findings[:min(n, 2)])
	}
	it, err := res.doc.Fields()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for it.Next() {
		seen = append(seen, it.Selector().Unquoted())
	}
	if len(seen) != 1 || seen[0] != "description" {
		t.Errorf("CUE evaluated keys %v, want only [description]", seen[:min(len(seen), 5)])
	}
}

// TestOtherToolsSpellings: a key another tool spells differently gets the
// facets key in its hint, for the definition that has that key.
func TestOtherToolsSpellings(t *testing.T) {
	s := mustLoad(t)
	for _, tc := range []struct {
		d          Definition
		src, field string
		want       string
	}{
		{Role, "systemPromptMode: append\n", "systemPromptMode", "write system-prompt"},
		{Role, "defaultContext: fork\n", "defaultContext", "write session-mode"},
		{Role, "allowed-tools: read\n", "allowed-tools", "write tools"},
		{Role, "thinkingLevel: high\n", "thinkingLevel", "write thinking"},
		{Role, "colour: red\n", "colour", "allowed keys: name,"},
	} {
		r := s.ValidateFrontmatter(tc.d, "r.md", []byte(tc.src), 2)
		var hint string
		for _, f := range r.Findings {
			if f.Field == tc.field && f.Code == CodeUnknownField {
				hint = f.Hint
			}
		}
		if !strings.Contains(hint, tc.want) {
			t.Errorf("%q: hint %q, want one holding %q", tc.src, hint, tc.want)
		}
	}
	r := s.ValidateJSON(Profile, "config.json", []byte(`{"version": 1, "name": "p", "tools": ["read"], "thinking": "high"}`))
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Hint, "write thinkingLevel") {
		t.Errorf("a profile's thinking: %+v, want the hint to write thinkingLevel", r.Findings)
	}
}

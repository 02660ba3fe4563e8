package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/golden"
	"github.com/facets-dev/facets/profiles"
)

// A role fixture is a txtar archive under testdata/roles. Its comment is a
// description paragraph, a blank line, then directives, one per line:
//
//	bundled: DIR          bundled roles dir, relative to the tree
//	packs: P1 P2 ...      registered paths, relative to the tree; "=P" keeps P literally
//	trusted: false        the project is untrusted (default true)
//	symlink: LINK TARGET  create a symlink in the tree
//	fifo: PATH            create a named pipe
//	big: PATH BYTES       create a file of that many bytes
//
// The agent dir is <tree>/agent and the cwd <tree>/project. The section
// named "want" holds the expected catalog; FACETS_UPDATE=1 rewrites it.
type roleFixture struct {
	path    string
	archive *txtar.Archive
	input   RoleInput
	tree    string
}

func loadRoleFixture(t *testing.T, path string) *roleFixture {
	t.Helper()
	a, tree := writeFixtureTree(t, path)
	f := &roleFixture{path: path, archive: a, tree: tree,
		input: RoleInput{AgentDir: filepath.Join(tree, "agent"), Cwd: filepath.Join(tree, "project"), Trusted: true}}
	_, directives, _ := strings.Cut(string(a.Comment), "\n\n") // a description paragraph comes first
	for _, line := range strings.Split(directives, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		args := strings.Fields(val)
		abs := func(p string) string { return filepath.Join(tree, filepath.FromSlash(p)) }
		mkdir := func(p string) {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		switch strings.TrimSpace(key) {
		case "bundled":
			f.input.BundledDir = abs(args[0])
		case "packs":
			for _, p := range args {
				if lit, ok := strings.CutPrefix(p, "="); ok {
					f.input.Packs = append(f.input.Packs, lit)
				} else {
					f.input.Packs = append(f.input.Packs, abs(p))
				}
			}
		case "trusted":
			f.input.Trusted = args[0] == "true"
		case "symlink":
			mkdir(abs(args[0]))
			if err := os.Symlink(args[1], abs(args[0])); err != nil {
				t.Fatal(err)
			}
		case "fifo":
			mkdir(abs(args[0]))
			if err := syscall.Mkfifo(abs(args[0]), 0o644); err != nil {
				t.Fatal(err)
			}
		case "big":
			n, err := strconv.Atoi(args[1])
			if err != nil {
				t.Fatal(err)
			}
			mkdir(abs(args[0]))
			data := append([]byte("---\ndescription: big\n---\n"), bytes.Repeat([]byte("x"), n)...)
			if err := os.WriteFile(abs(args[0]), data[:n], 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: unknown directive %q", path, line)
		}
	}
	return f
}

// renderRoles prints a compile result with the temporary tree replaced by
// $TREE, so it can be compared with the fixture's want section.
func renderRoles(tree string, roles []manifest.Role, diags []Diagnostic, sources []manifest.Source) string {
	var b strings.Builder
	b.WriteString("roles:\n")
	for _, r := range roles {
		r.SHA256 = r.SHA256[:12]
		js, _ := json.Marshal(r)
		b.WriteString(string(js) + "\n")
	}
	b.WriteString("diagnostics:\n")
	for _, d := range diags {
		fmt.Fprintf(&b, "%s %s %s:%d:%d [%s] %s\n", d.Severity, d.Code, d.File, d.Line, d.Column, d.Subject, d.Message)
		if d.Hint != "" {
			fmt.Fprintf(&b, "\thint: %s\n", d.Hint)
		}
	}
	b.WriteString("sources:\n")
	for _, s := range sources {
		fmt.Fprintf(&b, "%s %s\n", s.Path, s.SHA256[:12])
	}
	return strings.ReplaceAll(b.String(), tree, "$TREE")
}

func loadSchema(t testing.TB) *cue.Schema {
	t.Helper()
	s, err := cue.Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRoleFixtures compiles every testdata/roles/*.txtar tree and compares
// the catalog, diagnostics and sources with its want section.
func TestRoleFixtures(t *testing.T) {
	schema := loadSchema(t)
	paths, err := filepath.Glob("../testdata/roles/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no role fixtures found")
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			f := loadRoleFixture(t, path)
			roles, _, diags, sources := compileRoles(schema, f.input)
			got := renderRoles(f.tree, roles, diags, sources)
			golden.Section(t, path, f.archive, "want", got)
			golden.SaveArchive(t, path, f.archive)
		})
	}
}

// TestRoleDeterministic checks that compiling the same tree twice gives the
// same result.
func TestRoleDeterministic(t *testing.T) {
	schema := loadSchema(t)
	f := loadRoleFixture(t, "../testdata/roles/layers.txtar")
	r1, _, d1, s1 := compileRoles(schema, f.input)
	r2, _, d2, s2 := compileRoles(schema, f.input)
	if diff := cmp.Diff(renderRoles(f.tree, r1, d1, s1), renderRoles(f.tree, r2, d2, s2)); diff != "" {
		t.Errorf("second compile differs:\n%s", diff)
	}
}

// parseOne validates a single role file given as text in the given layer.
func parseOne(t *testing.T, schema *cue.Schema, layer, stem, text string) (roleDef, []Diagnostic) {
	t.Helper()
	return (&roleParser{schema: schema}).parse(&profiles.RoleFile{Layer: layer, Path: "/r/" + stem + ".md", Stem: stem, Data: []byte(text)})
}

func codes(ds []Diagnostic) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Severity)+":"+d.Code)
	}
	return out
}

// TestRoleFields covers how frontmatter values become manifest fields.
func TestRoleFields(t *testing.T) {
	schema := loadSchema(t)
	yes, no := true, false
	tests := []struct {
		name string
		text string
		want manifest.Role
	}{
		{"comma lists are split and trimmed", "---\ntools: read,  bash ,grep\ndeny-tools: subagent\nskills: a, b\n---\nBody\n",
			manifest.Role{Tools: []string{"read", "bash", "grep"}, DenyTools: []string{"subagent"}, Skills: []string{"a", "b"}, Body: "Body"}},
		{"skill is read when skills is absent", "---\nskill: one, two\n---\n",
			manifest.Role{Skills: []string{"one", "two"}}},
		{"skills wins over skill", "---\nskills: a\nskill: b\n---\n", manifest.Role{Skills: []string{"a"}}},
		{"booleans and enums", "---\nspawning: false\nauto-exit: true\ninteractive: false\npersistent: true\nthinking: high\nsystem-prompt: append\nsession-mode: fork\ndisable-model-invocation: true\n---\n",
			manifest.Role{Spawning: &no, AutoExit: &yes, Interactive: &no, Persistent: &yes, Thinking: "high", SystemPrompt: "append",
				SessionMode: "fork", DisableModelInvocation: true}},
		{"strings", "---\ndescription: Reviews code\nmodel: anthropic/claude-sonnet-4\ncwd: work\n---\n",
			manifest.Role{Description: "Reviews code", Model: "anthropic/claude-sonnet-4", Cwd: "work"}},
		{"dropped and read-as-false values", "---\nthinking: huge\nsession-mode: detached\nauto-exit: True\ninteractive: yes\ndisable-model-invocation: TRUE\n---\n",
			manifest.Role{AutoExit: &no, Interactive: &no, DisableModelInvocation: true}},
		{"empty block is an empty mapping", "---\n\n---\n\n\nHello\n\n", manifest.Role{Body: "Hello"}},
		{"closing marker with trailing text still closes", "---\ntools: read\n----\nBody\n", manifest.Role{Tools: []string{"read"}, Body: "-\nBody"}},
		{"comment-only block", "---\n# nothing yet\n---\nB", manifest.Role{Body: "B"}},
		// pi-herdr-agents reads the rest of the line; YAML cannot read it.
		{"a plain value with ': '", "---\ndescription: Plans work. Use when: the task is large\ntools: read\n---\n",
			manifest.Role{Description: "Plans work. Use when: the task is large", Tools: []string{"read"}}},
		{"a plain value ending in ':'", "---\ndescription: Does this: \"a\" and \\b, then:\n---\n",
			manifest.Role{Description: `Does this: "a" and \b, then:`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, diags := parseOne(t, schema, profiles.LayerGlobal, "r", tt.text)
			if HasErrors(diags) || !def.valid {
				t.Fatalf("unexpected errors: %v", diags)
			}
			got := *def.role
			got.Name, got.Layer, got.Path, got.SHA256 = "", "", "", ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("role mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// roleFileCase is a role file with the name, usability and diagnostic
// codes ("severity:code") parsing gives it in one layer.
type roleFileCase struct {
	name      string
	layer     string
	stem      string
	text      string
	wantName  string
	wantValid bool
	wantCodes []string
}

// roleFileCases are the per-file rules: which codes a file gets, in which
// layer, and whether it stays usable. They also seed FuzzRoleFrontmatter.
func roleFileCases() []roleFileCase {
	const pack, global = profiles.LayerPackage, profiles.LayerGlobal
	return []roleFileCase{
		{"valid pack role", pack, "r", "---\ndescription: d\n---\nB", "r", true, nil},
		{"pack needs description", pack, "r", "---\nmodel: a/b\n---\n", "r", false, []string{"error:missing-role-description"}},
		{"pack blank description", pack, "r", "---\ndescription: \"  \"\n---\n", "r", false, []string{"error:invalid-value"}},
		{"pack name must equal stem", pack, "r", "---\nname: other\ndescription: d\n---\n", "r", false, []string{"error:role-name-mismatch"}},
		{"pack name equal to stem", pack, "r", "---\nname: r\ndescription: d\n---\n", "r", true, nil},
		{"pack with a yaml error reports only that", pack, "r", "---\nmodel: [a\n---\n", "r", false, []string{"error:syntax"}},
		{"pack without frontmatter", pack, "r", "just text\n", "r", false, []string{"error:invalid-role-definition"}},
		{"global without frontmatter is ignored", global, "r", "just text\n", "r", false, []string{"warning:missing-frontmatter"}},
		{"unterminated frontmatter", global, "r", "---\ntools: read\n", "r", false, []string{"warning:missing-frontmatter"}},
		{"global name differs from stem", global, "r", "---\nname: other\n---\n", "other", true, []string{"warning:role-name-differs"}},
		{"global needs no description", global, "r", "---\ntools: read\n---\n", "r", true, nil},
		{"unknown key is a warning", global, "r", "---\noutput: x\ncli-model: y\n---\n", "r", true, []string{"warning:unknown-field", "warning:unknown-field"}},
		{"cli is rejected", global, "r", "---\nname: n\ncli: claude\n---\n", "n", false, []string{"error:external-cli-unsupported"}},
		{"empty cli is not a cli", global, "r", "---\ncli:\n---\n", "r", true, []string{"warning:unknown-field"}},
		{"pack cli is rejected", pack, "r", "---\ncli: claude\ndescription: d\n---\n", "r", false, []string{"error:external-cli-unsupported"}},
		// pi-herdr-agents drops an unsupported thinking, system-prompt or
		// session-mode value and keeps the role: so does facets, with a warning.
		{"bad enum is dropped", global, "r", "---\nthinking: huge\n---\n", "r", true, []string{"warning:ignored-role-value"}},
		{"bad enum under a hyphenated key", global, "r", "---\nsystem-prompt: prepend\n---\n", "r", true, []string{"warning:ignored-role-value"}},
		{"bad session-mode", pack, "r", "---\ndescription: d\nsession-mode: detached\n---\n", "r", true, []string{"warning:ignored-role-value"}},
		{"enum with a comment is dropped", global, "r", "---\nthinking: high # deep\n---\n", "r", true, []string{"warning:ignored-role-value"}},
		{"duplicate enum stays an error", global, "r", "---\nthinking: high\nthinking: low\n---\n", "r", false, []string{"error:duplicate-key"}},
		{"empty value counts as absent", global, "r", "---\ndescription:\nthinking:\n---\n", "r", true,
			[]string{"warning:ignored-role-value", "warning:ignored-role-value"}},
		{"empty tools stays an error", global, "r", "---\ntools:\n---\n", "r", false, []string{"error:invalid-value"}},
		// auto-exit, interactive: anything but exactly true reads as false.
		{"string for a hyphenated bool", global, "r", "---\nauto-exit: \"true\"\nextra: 1\n---\n", "r", true,
			[]string{"warning:ignored-role-value", "warning:unknown-field"}},
		{"yes is false for interactive", global, "r", "---\ninteractive: yes\n---\n", "r", true, []string{"warning:ignored-role-value"}},
		{"capitalised bool", global, "r", "---\nauto-exit: True\n---\n", "r", true, []string{"warning:ignored-role-value"}},
		// spawning and persistent follow the fork's strict capability rule.
		{"non-bool", global, "r", "---\nspawning: yes\n---\n", "r", false, []string{"error:invalid-value"}},
		{"non-bool persistent", global, "r", "---\npersistent: maybe\n---\n", "r", false, []string{"error:invalid-value"}},
		{"bad model stays an error", global, "r", "---\nmodel: sonnet\n---\n", "r", false, []string{"error:invalid-value"}},
		{"disable-model-invocation is case-insensitive", global, "r", "---\ndisable-model-invocation: True\n---\n", "r", true, nil},
		{"yaml list for tools", global, "r", "---\ntools: [read, bash]\n---\n", "r", false, []string{"error:invalid-value"}},
		{"quoted tools", global, "r", "---\ntools: \"read, bash\"\n---\n", "r", false, []string{"error:invalid-capability-declaration"}},
		{"tools comment", global, "r", "---\ntools: read # no bash\n---\n", "r", false, []string{"error:invalid-capability-declaration"}},
		{"tools block scalar", global, "r", "---\ntools: |\n  read\n---\n", "r", false, []string{"error:invalid-capability-declaration"}},
		{"indented tools", global, "r", "---\ndescription: |\n  tools: read\n---\n", "r", false,
			[]string{"warning:frontmatter-divergence", "error:invalid-capability-declaration"}},
		{"space before colon", global, "r", "---\nspawning : false\n---\n", "r", false, []string{"error:invalid-capability-declaration"}},
		{"tools inside a quoted scalar", global, "r", "---\ndescription: \"a\ntools: read\"\n---\n", "r", false,
			[]string{"warning:frontmatter-divergence", "error:invalid-capability-declaration"}},
		{"empty list item", global, "r", "---\ntools: read,,bash\n---\n", "r", false, []string{"error:invalid-value"}},
		{"quoted model", global, "r", "---\nmodel: \"a/b\"\n---\n", "r", false, []string{"error:frontmatter-divergence"}},
		{"quoted description warns", global, "r", "---\ndescription: \"Reviews\"\n---\n", "r", true, []string{"warning:frontmatter-divergence"}},
		{"duplicate key", global, "r", "---\ntools: read\ntools: bash\n---\n", "r", false, []string{"error:duplicate-key"}},
		{"not a mapping", global, "r", "---\n- a\n---\n", "r", false, []string{"error:not-object"}},
		{"yaml syntax error", global, "r", "---\ndescription: a: b # c\n---\n", "r", false, []string{"error:syntax"}},
		{"a plain value with ': ' is read as pi-herdr-agents reads it", pack, "r", "---\nname: r\ndescription: a: b\n---\n", "r", true, nil},
		{"unclosed flow", global, "r", "---\ntools: [read: x\n---\n", "r", false, []string{"error:syntax"}},
		{"Claude Code tool names", global, "r", "---\ntools: Read, grep, WebFetch\ndeny-tools: Bash\n---\n", "r", true,
			[]string{"warning:claude-tool-name", "warning:claude-tool-name", "warning:claude-tool-name"}},
		{"bad utf-8 in frontmatter", global, "r", "---\ndescription: \xff\n---\n", "r", false, []string{"error:encoding"}},
		{"bare cr in frontmatter", global, "r", "---\n\r\r0\n---", "r", false, []string{"error:syntax"}},
		{"crlf inside lf frontmatter is fine", global, "r", "---\ntools: read\r\n---\n", "r", true, nil},
		{"bad utf-8 in body", global, "r", "---\ndescription: d\n---\nbody \xfe\n", "r", false, []string{"error:invalid-role-encoding"}},
		{"crlf", global, "r", "---\r\nname: n\r\ntools: read\r\n---\r\nB\r\n", "n", false, []string{"error:unsupported-line-endings", "warning:role-name-differs"}},
		{"bom", pack, "r", "\uFEFF---\ndescription: d\n---\nB\n", "r", false, []string{"error:unsupported-line-endings"}},
		{"crlf without frontmatter still masks", global, "r", "\uFEFFtext\r\n", "r", false,
			[]string{"error:unsupported-line-endings", "warning:missing-frontmatter"}},
		{"valid role with tools and spawning", pack, "r", "---\ndescription: Reviews code\ntools: read, bash\nspawning: false\n---\nReview.\n", "r", true, nil},
		// Every problem of the file in one run: auto-exit's reading is
		// reported beside the tools error, not once it is fixed.
		{"yaml list beside a dropped enum", global, "r", "---\ntools: [a, b]\nthinking: huge\nauto-exit: True\n---\n", "r", false,
			[]string{"error:invalid-value", "warning:ignored-role-value", "warning:ignored-role-value"}},
		{"a divergence beside an error", global, "r", "---\ndescription: \"quoted\"\ntools: 7\n---\n", "r", false,
			[]string{"warning:frontmatter-divergence", "error:invalid-value"}},
		{"empty frontmatter", global, "r", "---\n\n---\n", "r", true, nil},
		{"empty frontmatter in a pack", pack, "r", "---\n\n---\n", "r", false, []string{"error:missing-role-description"}},
		{"empty item in skill", global, "r", "---\nskill: a,,b\nskills: c\n---\n", "r", false, []string{"error:invalid-value"}},
		{"anchor and merge keys are unknown fields", global, "r", "---\n&a x: *a\n<<: {y: 1}\n---\n", "r", true,
			[]string{"warning:unknown-field", "warning:unknown-field"}},
		{"no frontmatter", global, "r", "no frontmatter", "r", false, []string{"warning:missing-frontmatter"}},
		{"no frontmatter in a pack", pack, "r", "no frontmatter", "r", false, []string{"error:invalid-role-definition"}},
		{"bad utf-8 in frontmatter and body", global, "r", "---\ndescription: \xff\n---\n\xfe", "r", false,
			[]string{"error:invalid-role-encoding", "error:encoding"}},
	}
}

func TestRoleFileRules(t *testing.T) {
	schema := loadSchema(t)
	for _, tt := range roleFileCases() {
		t.Run(tt.name, func(t *testing.T) {
			def, diags := parseOne(t, schema, tt.layer, tt.stem, tt.text)
			if def.name != tt.wantName || def.valid != tt.wantValid {
				t.Errorf("name, valid = %q, %v; want %q, %v (diags %v)", def.name, def.valid, tt.wantName, tt.wantValid, diags)
			}
			if diff := cmp.Diff(tt.wantCodes, codes(diags)); diff != "" {
				t.Errorf("codes mismatch (-want +got):\n%s\n%v", diff, diags)
			}
			for _, d := range diags {
				if d.Subject != def.name {
					t.Errorf("diagnostic %s has subject %q, want %q", d.Code, d.Subject, def.name)
				}
				if d.File != "/r/"+tt.stem+".md" {
					t.Errorf("diagnostic %s names file %q", d.Code, d.File)
				}
			}
		})
	}
}

// TestRolePositions checks that frontmatter findings point into the
// Markdown file, not into the extracted YAML.
func TestRolePositions(t *testing.T) {
	schema := loadSchema(t)
	_, diags := parseOne(t, schema, profiles.LayerGlobal, "r",
		"---\ndescription: ok\nmodel: nope\nbogus: 1\n---\nBody\n")
	got := map[string][2]int{}
	for _, d := range diags {
		got[d.Code] = [2]int{d.Line, d.Column}
	}
	want := map[string][2]int{"invalid-value": {3, 8}, "unknown-field": {4, 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("positions mismatch (-want +got):\n%s", diff)
	}
}

// TestRoleKeysMatchSchema keeps roleKeys in step with #Role: every listed
// key is allowed, and a key outside the list is not.
func TestRoleKeysMatchSchema(t *testing.T) {
	schema := loadSchema(t)
	for _, k := range append(slices.Clone(roleKeys), "cli-model") {
		res := schema.ValidateFrontmatter(cue.Role, "f.md", []byte(k+": x\n"), 1)
		unknown := slices.ContainsFunc(res.Findings, func(f cue.Finding) bool { return f.Code == cue.CodeUnknownField })
		if want := k == "cli-model"; unknown != want {
			t.Errorf("key %q: unknown = %v, want %v", k, unknown, want)
		}
	}
}

// TestRoleSyntaxErrorPosition checks that a YAML syntax error names its
// line in the Markdown file and says what is wrong.
func TestRoleSyntaxErrorPosition(t *testing.T) {
	schema := loadSchema(t)
	// ": " and a " #" comment: YAML cannot read the line, and quoting it
	// would change what pi-herdr-agents reads (it keeps the comment).
	_, diags := parseOne(t, schema, profiles.LayerGlobal, "r", "---\nmodel: a/b\ndescription: Reviews: code # soon\n---\n")
	if len(diags) != 1 {
		t.Fatalf("want one diagnostic, got %v", diags)
	}
	d := diags[0]
	if d.Code != cue.CodeSyntax || d.Line != 3 || d.Column != 21 || !strings.Contains(d.Message, "mapping values are not allowed") ||
		!strings.Contains(d.Hint, `description: "..."`) {
		t.Errorf("got %+v; want a syntax error at the ': ' of line 3 (column 21) with the hint to quote the value", d)
	}
}

// TestClaudeCodeHints: a role written for Claude Code gets told what Pi
// calls its tools, and what to do with its model alias.
func TestClaudeCodeHints(t *testing.T) {
	schema := loadSchema(t)
	for _, tc := range []struct{ text, code, in string }{
		{"---\nmodel: inherit\n---\n", cue.CodeInvalidValue, "drop the model line"},
		{"---\nmodel: sonnet\n---\n", cue.CodeInvalidValue, "--model-map"},
		{"---\nmodel: gpt\n---\n", cue.CodeInvalidValue, "anthropic/claude-sonnet-4"},
		{"---\ntools: read, Glob\n---\n", "claude-tool-name", "write find"},
	} {
		_, diags := parseOne(t, schema, profiles.LayerGlobal, "r", tc.text)
		var found bool
		for _, d := range diags {
			found = found || d.Code == tc.code && strings.Contains(d.Hint, tc.in)
		}
		if !found {
			t.Errorf("%q: %v, want %s with a hint holding %q", tc.text, diags, tc.code, tc.in)
		}
	}
}

// TestRoleExample compiles the roles of the README's example tree: a role
// pack, two global roles and a project role overriding a pack role.
func TestRoleExample(t *testing.T) {
	schema := loadSchema(t)
	root, err := filepath.Abs("../testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	roles, _, diags, sources := compileRoles(schema, RoleInput{
		Packs:    []string{filepath.Join(root, "rolepack", "roles")},
		AgentDir: filepath.Join(root, "agent"),
		Cwd:      filepath.Join(root, "project", "service"),
		Trusted:  true,
	})
	if len(diags) != 0 {
		t.Errorf("example has diagnostics: %v", diags)
	}
	var got []string
	for _, r := range roles {
		got = append(got, fmt.Sprintf("%s %s %s@%s overrides=%d", r.Name, r.Layer, r.Provider, r.ProviderVersion, len(r.Overrides)))
	}
	want := []string{
		"planner global @ overrides=0",
		"scout global @ overrides=0",
		"security-reviewer package @example/review-roles@1.4.0 overrides=0",
		"test-writer project @ overrides=1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("example roles mismatch (-want +got):\n%s", diff)
	}
	if len(sources) != 6 {
		t.Errorf("got %d sources, want 5 role files and package.json: %v", len(sources), sources)
	}
}

// BenchmarkCompileRoles1000 compiles 1,000 role files: 400 in two packs,
// 400 global and 200 project roles overriding some of them.
func BenchmarkCompileRoles1000(b *testing.B) {
	schema := loadSchema(b)
	root := b.TempDir()
	write := func(dir string, i int, extra string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		text := fmt.Sprintf("---\ndescription: manifest.Role %d\ntools: read, bash\nthinking: high\nspawning: false\n%s---\nDo task %d.\n", i, extra, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("role-%04d.md", i)), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 1000 {
		switch {
		case i < 200:
			write(filepath.Join(root, "pack-a"), i, "")
		case i < 400:
			write(filepath.Join(root, "pack-b"), i, "auto-exit: true\n")
		case i < 800:
			write(filepath.Join(root, "agent", "agents"), i, "system-prompt: append\n")
		default:
			write(filepath.Join(root, "project", ".pi", "agents"), i-800, "model: a/b\n")
		}
	}
	in := RoleInput{Packs: []string{filepath.Join(root, "pack-a"), filepath.Join(root, "pack-b")},
		AgentDir: filepath.Join(root, "agent"), Cwd: filepath.Join(root, "project"), Trusted: true}
	b.ResetTimer()
	for b.Loop() {
		roles, _, diags, _ := compileRoles(schema, in)
		if len(roles) != 800 || len(diags) != 0 {
			b.Fatalf("got %d roles, %d diagnostics", len(roles), len(diags))
		}
	}
}

// FuzzRoleFrontmatter feeds arbitrary role files through frontmatter
// splitting, schema validation and the line-reader cross-check, in a pack
// and in the global layer. It never panics, every diagnostic is complete
// and names the role, and a file is either usable, ignored with a warning,
// or rejected with an error; never dropped silently.
func FuzzRoleFrontmatter(f *testing.F) {
	for _, tc := range roleFileCases() {
		f.Add([]byte(tc.text), false)
		f.Add([]byte(tc.text), true)
	}
	schema := loadSchema(f)
	p := &roleParser{schema: schema}
	f.Fuzz(func(t *testing.T, data []byte, pack bool) {
		layer := profiles.LayerGlobal
		if pack {
			layer = profiles.LayerPackage
		}
		const path = "/fuzz/role.md"
		began := time.Now()
		def, diags := p.parse(&profiles.RoleFile{Layer: layer, Path: path, Stem: "role", Data: data})
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("parsing %d bytes took %v", len(data), d) // a pathological input must not stall a compile
		}
		wantPlaced(t, diags, path, def.name, data)
		switch {
		case def.valid:
			if HasErrors(diags) {
				t.Fatalf("valid role with errors: %v", diags)
			}
			r := *def.role
			if r.Name != def.name || r.Name == "" || !utf8.ValidString(r.Body) || r.Body != strings.TrimSpace(r.Body) {
				t.Fatalf("bad role %+v", r)
			}
			if pack && (r.Name != "role" || strings.TrimSpace(r.Description) == "") {
				t.Fatalf("pack role without stem name or description: %+v", r)
			}
			for _, list := range [][]string{r.Tools, r.DenyTools, r.Skills} {
				for _, item := range list {
					if item == "" || item != strings.TrimSpace(item) {
						t.Fatalf("bad list item %q in %+v", item, r)
					}
				}
			}
		case def.ignored:
			if pack || len(diags) == 0 {
				t.Fatalf("ignored without a warning (pack %v): %v", pack, diags)
			}
		default:
			if !HasErrors(diags) {
				t.Fatalf("rejected without an error: %v", diags)
			}
		}
	})
}

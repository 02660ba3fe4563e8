package cue

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/facets-dev/facets/cue/internal/fastgen"
	"github.com/facets-dev/facets/internal/frontmatter"
)

// TestFastValidatorUpToDate fails when fastvalidate_gen.go no longer
// matches the embedded schema: run go generate ./cue.
func TestFastValidatorUpToDate(t *testing.T) {
	files := map[string][]byte{}
	entries, err := schemaFiles.ReadDir("schema")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := schemaFiles.ReadFile("schema/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	want, err := fastgen.Generate(files)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("fastvalidate_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("fastvalidate_gen.go is stale; run go generate ./cue\n%s", cmp.Diff(string(want), string(got)))
	}
}

// TestFastGeneratorRefusesUnknownConstructs checks the generator fails on
// schema syntax it cannot translate instead of guessing.
func TestFastGeneratorRefusesUnknownConstructs(t *testing.T) {
	for _, field := range []string{
		`x?: int`, `x?: >3`, `x?: *"a" | "b"`, `x?: {y: string}`, `x?: [string]`, `x?: strings.MinLen(2)`, `x: string`,
	} {
		src := "package facets\n#Profile: {\n" + field + "\n}\n#Role: {}\n"
		if _, err := fastgen.Generate(map[string][]byte{"p.cue": []byte(src)}); err == nil {
			t.Errorf("generator accepted %q", field)
		}
	}
}

// TestFastGeneratorRefusesRepeatedDeclarations: CUE unifies every
// declaration of a label, so a generator that keeps one of them would let
// the fast path accept what CUE rejects.
func TestFastGeneratorRefusesRepeatedDeclarations(t *testing.T) {
	for name, files := range map[string]map[string][]byte{
		"two files": {
			"a.cue": []byte("package facets\n#Profile: {\nname?: =~\"b$\"\n}\n#Role: {}\n"),
			"b.cue": []byte("package facets\n#Profile: {\nname?: =~\"^a\"\n}\n"),
		},
		"one file":   {"a.cue": []byte("package facets\n#Profile: {}\n#Role: {}\n#Profile: {x?: string}\n")},
		"same field": {"a.cue": []byte("package facets\n#Profile: {\nname?: =~\"b$\"\nname?: =~\"^a\"\n}\n#Role: {}\n")},
	} {
		if _, err := fastgen.Generate(files); err == nil {
			t.Errorf("%s: generator accepted a repeated declaration", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// sameAsCUE validates one document both ways, through the public API with
// the fast path and with CUE alone, and fails unless the results agree:
// verdict, findings, positions and decoded value. It reports whether the
// fast path decided the document. The schemas are reused across documents
// (as in a compile), so state leaking from one document to the next shows.
func (p schemaPair) sameAsCUE(t *testing.T, d Definition, json bool, src []byte, start int) bool {
	t.Helper()
	fast, ref := p.fast, p.ref
	var got, want *Result
	if json {
		got, want = fast.ValidateJSON(d, "doc", src), ref.ValidateJSON(d, "doc", src)
	} else {
		got, want = fast.ValidateFrontmatter(d, "doc.md", src, start), ref.ValidateFrontmatter(d, "doc.md", src, start)
	}
	if got.OK() != want.OK() {
		t.Fatalf("%s %q: fast path says valid=%v, CUE says valid=%v (findings %v)", d, src, got.OK(), want.OK(), want.Findings)
	}
	if diff := cmp.Diff(want.Findings, got.Findings); diff != "" {
		t.Fatalf("%s %q: findings differ (-CUE +fast):\n%s", d, src, diff)
	}
	for field := range want.pos {
		gl, gc := got.Position(field)
		wl, wc := want.Position(field)
		if gl != wl || gc != wc {
			t.Fatalf("%s %q: position of %s: fast %d:%d, CUE %d:%d", d, src, field, gl, gc, wl, wc)
		}
	}
	var gm, wm map[string]any
	gerr, werr := got.Decode(&gm), want.Decode(&wm)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s %q: decode errors differ: fast %v, CUE %v", d, src, gerr, werr)
	}
	if diff := cmp.Diff(wm, gm); diff != "" {
		t.Fatalf("%s %q: decoded values differ (-CUE +fast):\n%s", d, src, diff)
	}
	return got.fast != nil
}

// schemaPair is a schema with the fast path and one validating with CUE only.
type schemaPair struct{ fast, ref *Schema }

func newSchemaPair() schemaPair { return schemaPair{&Schema{}, &Schema{slowOnly: true}} }

// seedDocuments collects the repository's profile configs and role
// frontmatter: fuzz seeds, compile fixtures and role fixtures.
func seedDocuments(t testing.TB) (profiles, roles [][]byte) {
	profiles = [][]byte{
		[]byte(`{"version":1,"name":"a","tools":["read"]}`),
		[]byte(`{"version":1,"name":"a","tools":["read"],"skills":["x"],"instructions":"i","invocation":"manual"}`),
		[]byte(`{"version":2}`), []byte(`[]`), []byte(`{`), []byte(`{"a":{"b":[1,{"c":null}]}}`), []byte("\xff"),
		[]byte(`{"tools":[1,2,3],"tools":[]}`),
		[]byte(`{"version": 1.0, "name": "a", "tools": ["read"]}`),
		[]byte(`{"version": 1, "name": "a\"b", "tools": ["re\nad"], "description": " "}`),
		[]byte(`{"version": 1, "name": "a", "tools": ["read"], "$schema": "x", "sessionPersistence": "persistent"}`),
		[]byte(`{"version": 1, "name": "a", "tools": ["read"]} {}`),
		[]byte(`{"version": 1, "name": "a", "tools": ["\u00e9"]}`),
		[]byte(`{"version": 1, "name": "a", "tools": []}`),
		[]byte(`{"version": 1, "name": "a", "tools": ["read"], "model": ""}`),
		// Non-ASCII inside strings: U+FEFF (which CUE's scanner refuses
		// and JSON allows), other invisible and multi-byte characters, and
		// U+FEFF in a key, after an escape and outside a string.
		[]byte("{\"version\":1,\"name\":\"x\",\"tools\":[\"read\"],\"$schema\":\"\uFEFF\"}"),
		[]byte("{\"version\":1,\"name\":\"x\",\"tools\":[\"read\"],\"$schema\":\"\uFEFF\",\"zz\":1}"),
		[]byte("{\"version\":1,\"name\":\"x\",\"tools\":[\"re\uFEFFad\"],\"description\":\"\\\"\uFEFF\u00a0\u200b\u2028\U0001F600\"}"),
		[]byte("{\"version\":1,\"name\":\"x\",\"tools\":[\"read\"],\"\uFEFFmodel\":\"a/b\"}"),
		[]byte("{\"version\":1,\"name\":\"x\",\"tools\":[\"read\"],\"model\":\"\u00e9/\u00e8\",\"instructions\":\"\u4e2d\u6587\"}"),
		[]byte("{\"version\":1,\"name\":\"x\",\"tools\":[\"read\"]\uFEFF}"),
		[]byte("{\"version\":1,\"name\":\"x\uFEFF\",\"tools\":[\"read\"],\"model\":7}"),
	}
	roles = [][]byte{
		[]byte("description: Reviews code\ntools: read, bash\nspawning: false"),
		[]byte("name: x\ncli: claude"),
		[]byte("tools: [a, b]\nthinking: huge\nauto-exit: True"),
		[]byte("description: \"a\ntools: read\""),
		[]byte("description: a: b"), []byte("- a"), []byte("tools: |\n  read"), []byte("skill: a,,b\nskills: c"),
		[]byte("&a x: *a\n<<: {y: 1}"), []byte("thinking: off"), []byte("thinking: high\nspawning: yes"),
		[]byte("model: anthropic/claude-sonnet-4, openai/gpt-5\nsession-mode: fork"),
		[]byte("description: x\ndescription: y"), []byte("# c\ndescription: d\n\ncwd: sub/dir"),
		[]byte("description: trailing "), []byte("name: Role.x_1\nsystem-prompt: append"),
		[]byte("description: a\uFEFFb\ntools: read"), []byte("description: \"\uFEFF\u00e9\"\nmodel: \u00e9/x"),
		[]byte("description: \u4e2d\u6587 \u200b\u00a0\U0001F600\ncwd: d\u00e9"), []byte("name: \u00e9\nthinking: off\u2028"),
	}
	seenRole := func(md []byte) {
		if yaml, _, _, ok := frontmatter.Split(md); ok {
			roles = append(roles, yaml)
		}
	}
	archives, _ := filepath.Glob(filepath.Join("..", "testdata", "*", "*.txtar"))
	for _, a := range archives {
		ar, err := txtar.ParseFile(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			switch {
			case strings.HasSuffix(f.Name, ".json") && !strings.Contains(f.Name, "package.json"):
				profiles = append(profiles, f.Data)
			case strings.HasSuffix(f.Name, ".md"):
				seenRole(f.Data)
			}
		}
	}
	corpus, _ := filepath.Glob(filepath.Join("..", "compiler", "testdata", "fuzz", "FuzzRoleFrontmatter", "*"))
	for _, c := range corpus {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		// go test fuzz v1 files hold []byte("...") lines; the role file is the first.
		for _, line := range strings.Split(string(b), "\n") {
			if s, ok := strings.CutPrefix(line, "[]byte("); ok {
				var md string
				if _, err := fmt.Sscanf(strings.TrimSuffix(s, ")"), "%q", &md); err == nil {
					seenRole([]byte(md))
				}
				break
			}
		}
	}
	return profiles, roles
}

// TestFastMatchesCUE runs every seed document through both paths.
func TestFastMatchesCUE(t *testing.T) {
	profiles, roles := seedDocuments(t)
	fastProfiles, fastRoles := 0, 0
	pair := newSchemaPair()
	for _, p := range profiles {
		if pair.sameAsCUE(t, Profile, true, p, 1) {
			fastProfiles++
		}
	}
	for _, r := range roles {
		if pair.sameAsCUE(t, Role, false, r, 2) {
			fastRoles++
		}
	}
	t.Logf("fast path decided %d of %d profiles, %d of %d roles", fastProfiles, len(profiles), fastRoles, len(roles))
	if fastProfiles < 5 || fastRoles < 5 {
		t.Fatalf("fast path decided only %d profiles and %d roles: the differential test proves nothing", fastProfiles, fastRoles)
	}
}

// TestFastPathDecidesTypicalDocuments pins that the shapes of real
// profiles and roles never reach CUE, which is what makes check fast.
func TestFastPathDecidesTypicalDocuments(t *testing.T) {
	profile := []byte(`{
  "$schema": "https://example.com/profile.schema.json",
  "version": 1,
  "name": "reviewer",
  "description": "Reviews code, reports findings",
  "model": "anthropic/claude-sonnet-4-5",
  "thinkingLevel": "high",
  "sessionPersistence": "persistent",
  "invocation": "manual",
  "tools": ["read", "grep", "find", "ls", "bash"],
  "skills": ["code-review", "./skills/local"],
  "instructions": "Review only.\nReport \"findings\"."
}
`)
	role := []byte("name: role-0001\ndescription: Generated role 1\nmodel: anthropic/claude-sonnet-4-5\nthinking: high\ntools: read, bash\nspawning: false\nauto-exit: true")
	pair := newSchemaPair()
	if !pair.sameAsCUE(t, Profile, true, profile, 1) {
		t.Error("typical profile went to CUE")
	}
	if !pair.sameAsCUE(t, Role, false, role, 2) {
		t.Error("typical role went to CUE")
	}
}

// FuzzFastProfileMatchesCUE: the fast path and CUE agree on every
// config.json, seeded with the repository's profiles.
func FuzzFastProfileMatchesCUE(f *testing.F) {
	profiles, _ := seedDocuments(f)
	fuzzSameAsCUE(f, profiles, Profile, true, 1)
}

// FuzzFastRoleMatchesCUE: the fast path and CUE agree on every role
// frontmatter, seeded with the repository's roles.
func FuzzFastRoleMatchesCUE(f *testing.F) {
	_, roles := seedDocuments(f)
	fuzzSameAsCUE(f, roles, Role, false, 2)
}

// fuzzSameAsCUE fuzzes the documents of one definition, starting from seeds,
// checking that the fast path and CUE agree on each (see sameAsCUE).
func fuzzSameAsCUE(f *testing.F, seeds [][]byte, d Definition, json bool, start int) {
	for _, s := range seeds {
		f.Add(s)
	}
	pair := newSchemaPair()
	f.Fuzz(func(t *testing.T, src []byte) {
		pair.sameAsCUE(t, d, json, src, start)
	})
}

// TestFEFFInsideJSONString pins the verdict on U+FEFF inside a JSON
// string: JSON allows it (and Pi's JSON.parse keeps it), so both paths
// accept the document and keep the character; outside a string it stays a
// syntax error. Before, CUE's scanner refused it only when a document
// went the slow path, so one unrelated error changed the verdict.
func TestFEFFInsideJSONString(t *testing.T) {
	pair := newSchemaPair()
	for _, s := range []*Schema{pair.fast, pair.ref} {
		src := "{\"version\":1,\"name\":\"x\",\"tools\":[\"read\"],\"$schema\":\"\uFEFF\"}"
		r := s.ValidateJSON(Profile, "c.json", []byte(src))
		if !r.OK() {
			t.Fatalf("slowOnly=%v: %v", s.slowOnly, r.Findings)
		}
		var m map[string]any
		if err := r.Decode(&m); err != nil || m["$schema"] != "\uFEFF" {
			t.Fatalf("slowOnly=%v: decoded %q, %v", s.slowOnly, m["$schema"], err)
		}
		// One unrelated error: reported alone, at its own column.
		r = s.ValidateJSON(Profile, "c.json", []byte(strings.TrimSuffix(src, "}")+`,"zz":1}`))
		if len(r.Findings) != 1 || r.Findings[0].Code != CodeUnknownField || r.Findings[0].Column != 59 {
			t.Fatalf("slowOnly=%v: %v", s.slowOnly, r.Findings)
		}
		r = s.ValidateJSON(Profile, "c.json", []byte("{\"version\":1,\"name\":\"x\",\"tools\":[\"read\"]\uFEFF}"))
		if len(r.Findings) != 1 || r.Findings[0].Code != CodeSyntax {
			t.Fatalf("slowOnly=%v: U+FEFF outside a string: %v", s.slowOnly, r.Findings)
		}
	}
}

// TestFEFFWithoutStandIn: a document holding every private-use character
// the CUE path could swap for U+FEFF gets the same verdict from both
// paths (CUE's refusal), however unlikely such a file is.
func TestFEFFWithoutStandIn(t *testing.T) {
	var all strings.Builder
	for r := rune(0xE000); r <= 0xF8FF; r++ {
		all.WriteRune(r)
	}
	src := []byte(`{"version":1,"name":"x","tools":["read"],"instructions":"` + all.String() + "\uFEFF" + `"}`)
	pair := newSchemaPair()
	pair.sameAsCUE(t, Profile, true, src, 1)
}

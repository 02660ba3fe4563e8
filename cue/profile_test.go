package cue

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	cuelang "cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/encoding/jsonschema"

	"github.com/facets-dev/facets/internal/golden"
)

func mustLoad(t testing.TB) *Schema {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestProfileRules is a table of the config.json rules: each case must
// produce exactly the listed finding codes at the listed fields.
func TestProfileRules(t *testing.T) {
	s := mustLoad(t)
	for _, tc := range []struct {
		name string
		doc  string
		want []string // "code field"
	}{
		{"minimal", `{"version":1,"name":"a","tools":["read"]}`, nil},
		{"everything", `{"$schema":"x","version":1,"name":"a.b_c-1","description":"d","model":"p/m","thinkingLevel":"high","sessionPersistence":"persistent","invocation":"manual","tools":["read"],"skills":["s"],"instructions":"i"}`, nil},
		{"version 2", `{"version":2,"name":"a","tools":["read"]}`, []string{"invalid-value version"}},
		{"version string", `{"version":"1","name":"a","tools":["read"]}`, []string{"invalid-value version"}},
		{"missing version", `{"name":"a","tools":["read"]}`, []string{"missing-field version"}},
		{"missing name and tools", `{"version":1}`, []string{"missing-field name", "missing-field tools"}},
		{"name leading dot", `{"version":1,"name":".a","tools":["read"]}`, []string{"invalid-value name"}},
		{"name 65 chars", `{"version":1,"name":"` + strings.Repeat("a", 65) + `","tools":["read"]}`, []string{"invalid-value name"}},
		{"name 64 chars", `{"version":1,"name":"` + strings.Repeat("a", 64) + `","tools":["read"]}`, nil},
		{"tools empty", `{"version":1,"name":"a","tools":[]}`, []string{"invalid-value tools"}},
		{"tools 128", `{"version":1,"name":"a","tools":[` + strings.TrimSuffix(strings.Repeat(`"t",`, 128), ",") + `]}`, nil},
		{"tools 129", `{"version":1,"name":"a","tools":[` + strings.TrimSuffix(strings.Repeat(`"t",`, 129), ",") + `]}`, []string{"invalid-value tools"}},
		{"tool blank", `{"version":1,"name":"a","tools":[" "]}`, []string{"invalid-value tools.0"}},
		{"tool 4097", `{"version":1,"name":"a","tools":["` + strings.Repeat("t", 4097) + `"]}`, []string{"invalid-value tools.0"}},
		{"skills 129", `{"version":1,"name":"a","tools":["r"],"skills":[` + strings.TrimSuffix(strings.Repeat(`"s",`, 129), ",") + `]}`, []string{"invalid-value skills"}},
		{"skills empty ok", `{"version":1,"name":"a","tools":["r"],"skills":[]}`, nil},
		{"persistence enum", `{"version":1,"name":"a","tools":["r"],"sessionPersistence":"saved"}`, []string{"invalid-value sessionPersistence"}},
		{"invocation enum", `{"version":1,"name":"a","tools":["r"],"invocation":"auto"}`, []string{"invalid-value invocation"}},
		{"description blank", `{"version":1,"name":"a","tools":["r"],"description":"\t"}`, []string{"invalid-value description"}},
		{"description 1025", `{"version":1,"name":"a","tools":["r"],"description":"` + strings.Repeat("d", 1025) + `"}`, []string{"invalid-value description"}},
		{"model 513", `{"version":1,"name":"a","tools":["r"],"model":"` + strings.Repeat("m", 513) + `"}`, []string{"invalid-value model"}},
		{"thinking any string", `{"version":1,"name":"a","tools":["r"],"thinkingLevel":"ultra"}`, nil},
		{"thinking 129", `{"version":1,"name":"a","tools":["r"],"thinkingLevel":"` + strings.Repeat("t", 129) + `"}`, []string{"invalid-value thinkingLevel"}},
		{"instructions blank", `{"version":1,"name":"a","tools":["r"],"instructions":" \n"}`, []string{"invalid-value instructions"}},
		{"instructions 65536 runes", `{"version":1,"name":"a","tools":["r"],"instructions":"` + strings.Repeat("读", 65536) + `"}`, nil},
		{"instructions 65537", `{"version":1,"name":"a","tools":["r"],"instructions":"` + strings.Repeat("i", 65537) + `"}`, []string{"invalid-value instructions"}},
		{"unknown key with suggestion", `{"version":1,"name":"a","tools":["r"],"modle":"x"}`, []string{"unknown-field modle"}},
		{"unknown and value errors together", `{"version":1,"name":"a","tools":[3],"extra":1}`, []string{"invalid-value tools.0", "unknown-field extra"}},
		{"duplicate key", `{"version":1,"name":"a","tools":["r"],"tools":["r"]}`, []string{"duplicate-key tools"}},
		// A duplicate is reported once: the two values' conflict is no
		// error of either value.
		{"duplicate model", `{"version":1,"name":"a","tools":["r"],"model":"a/b","model":"c/d"}`, []string{"duplicate-key model"}},
		{"duplicate tools", `{"version":1,"name":"a","tools":["read"],"tools":["bash","ls"]}`, []string{"duplicate-key tools"}},
		{"duplicate required key alone", `{"version":1,"name":"a","name":"b","tools":["r"]}`, []string{"duplicate-key name"}},
		{"not an object", `"x"`, []string{"not-object "}},
		{"syntax", `{"version":1,`, []string{"syntax "}},
		{"bad utf8", "{\"version\":1,\"name\":\"a\xff\"}", []string{"encoding "}},
		{"schema key must be string", `{"$schema":1,"version":1,"name":"a","tools":["r"]}`, []string{"invalid-value $schema"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := s.ValidateJSON(Profile, "config.json", []byte(tc.doc))
			var got []string
			for _, f := range res.Findings {
				got = append(got, f.Code+" "+f.Field)
				if f.Line < 1 || f.Column < 1 || f.File != "config.json" || f.Message == "" || f.Hint == "" {
					t.Errorf("finding lacks position, message or hint: %+v", f)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if res.OK() != (len(tc.want) == 0) {
				t.Errorf("OK() = %v with findings %v", res.OK(), got)
			}
		})
	}
}

// TestProfileJSONSchemaGolden keeps cue/profile.schema.json, the schema
// editors point "$schema" at, in step with the CUE source.
func TestProfileJSONSchemaGolden(t *testing.T) {
	s := mustLoad(t)
	got, err := s.JSONSchema(Profile)
	if err != nil {
		t.Fatal(err)
	}
	var pretty map[string]any
	if err := json.Unmarshal(got, &pretty); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(pretty, "", "  ")
	b = append(b, '\n')
	golden.Check(t, "profile.schema.json", b)
}

// TestJSONSchemaAgreesWithCUE reads the generated JSON Schema back the way
// an editor would (through CUE's JSON Schema decoder) and checks that it
// accepts and rejects the same documents as the CUE schema.
func TestJSONSchemaAgreesWithCUE(t *testing.T) {
	s := mustLoad(t)
	b, err := s.JSONSchema(Profile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cuecontext.New()
	f, err := jsonschema.Extract(ctx.CompileBytes(b), &jsonschema.Config{})
	if err != nil {
		t.Fatal(err)
	}
	editor := ctx.BuildFile(f)
	if err := editor.Err(); err != nil {
		t.Fatal(err)
	}
	docs := []string{
		`{"$schema":"./profile.schema.json","version":1,"name":"reviewer","tools":["read"]}`,
		`{"version":1,"name":"r","tools":["read"],"invocation":"manual","sessionPersistence":"persistent"}`,
		`{"version":2,"name":"r","tools":["read"]}`,
		`{"version":1,"name":"r","tools":[]}`,
		`{"version":1,"name":"r","tools":["read"],"extra":true}`,
		`{"version":1,"name":"-r","tools":["read"]}`,
		`{"version":1,"tools":["read"]}`,
		`{"version":1,"name":"r","tools":["read"],"invocation":"auto"}`,
		`{"version":1,"name":"r","tools":["read"],"description":"   "}`,
		// One rule for blank, ECMAScript's \s (which JSON Schema
		// validators use): none of these is a description or a tool.
		`{"version":1,"name":"r","tools":["read"],"description":"\u00a0"}`,
		`{"version":1,"name":"r","tools":["read"],"description":"\u3000\u3000"}`,
		`{"version":1,"name":"r","tools":["read"],"description":"\u000b"}`,
		`{"version":1,"name":"r","tools":["read"],"description":"\ufeff"}`,
		`{"version":1,"name":"r","tools":["\u00a0"]}`,
		`{"version":1,"name":"r","tools":["read"],"description":"\u00a0x"}`,
		// One rule for numbers: version is the number 1, however spelt, as
		// JSON Schema's const 1 is.
		`{"version":1.0,"name":"r","tools":["read"]}`,
		`{"version":1.00,"name":"r","tools":["read"]}`,
		`{"version":1e0,"name":"r","tools":["read"]}`,
		`{"version":1.5,"name":"r","tools":["read"]}`,
	}
	examples, _ := filepath.Glob("../testdata/example/agent/facets/profiles/*/config.json")
	for _, p := range examples {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	blank := map[string]bool{docs[9]: true, docs[10]: true, docs[11]: true, docs[12]: true, docs[13]: true}
	for _, doc := range docs {
		want := s.ValidateJSON(Profile, "doc.json", []byte(doc)).OK()
		if blank[doc] && want {
			t.Errorf("check accepts %s; white space alone is blank", doc)
		}
		if one := strings.Contains(doc, `"version":1.0`) || strings.Contains(doc, `"version":1e0`); one && !want {
			t.Errorf("check refuses %s; its version is the number 1", doc)
		}
		v := ctx.CompileString(doc)
		got := editor.Unify(v).Validate(cuelang.Concrete(true)) == nil
		if got != want {
			t.Errorf("JSON Schema says valid=%v, CUE says valid=%v, for %s", got, want, doc)
		}
	}
}

// FuzzProfileConfig feeds arbitrary bytes to the config.json validator: it
// must never panic, every finding must carry a position, and a document it
// accepts must be valid JSON that decodes.
// knownProfileKeys is docs/profiles.md's field table: any other key is an error.
var knownProfileKeys = map[string]bool{"$schema": true, "version": true, "name": true, "description": true,
	"model": true, "thinkingLevel": true, "sessionPersistence": true, "invocation": true, "tools": true,
	"skills": true, "instructions": true}

func hasUnknown(fs []Finding) bool {
	for _, f := range fs {
		if f.Code == CodeUnknownField {
			return true
		}
	}
	return false
}

func FuzzProfileConfig(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"name":"a","tools":["read"]}`,
		`{"version":1,"name":"a","tools":["read"],"skills":["x"],"instructions":"i","invocation":"manual"}`,
		`{"version":2}`, `[]`, `{`, `{"a":{"b":[1,{"c":null}]}}`, "\xff", `{"tools":[1,2,3],"tools":[]}`,
		// Keys CUE cannot make a label of.
		`{"version":1,"name":"a","tools":["read"],"a\nb.json":1}`,
		`{"version":1,"name":"a","tools":["read"],"\u001b]0;x\u0007":true}`,
	} {
		f.Add([]byte(seed))
	}
	s := mustLoad(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		res := s.ValidateJSON(Profile, "fuzz.json", data)
		for _, fd := range res.Findings {
			if fd.Line < 1 || fd.Column < 1 || fd.Message == "" {
				t.Fatalf("finding without position or message: %+v", fd)
			}
		}
		if !res.OK() && len(res.Findings) == 0 {
			t.Fatalf("rejected %q without a finding: check would pass it silently", data)
		}
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) == nil {
			for k := range keys {
				if knownProfileKeys[k] {
					continue
				}
				if res.OK() {
					t.Fatalf("key %q outside the known set validated", k)
				}
				// Invalid UTF-8 is refused before keys are looked at.
				if utf8.Valid(data) && !hasUnknown(res.Findings) {
					t.Fatalf("key %q outside the known set gave no unknown-field finding: %+v", k, res.Findings)
				}
			}
		}
		if res.OK() {
			if !json.Valid(data) {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			var cfg struct {
				Version int      `json:"version"`
				Name    string   `json:"name"`
				Tools   []string `json:"tools"`
			}
			if err := res.Decode(&cfg); err != nil {
				t.Fatalf("accepted document does not decode: %v", err)
			}
			if cfg.Version != 1 || cfg.Name == "" || len(cfg.Tools) == 0 {
				t.Fatalf("accepted document lacks required values: %+v", cfg)
			}
		}
	})
}

// TestSourceIsOneCUEFile checks that `facets schema --cue` output compiles
// on its own and defines the same definitions as the embedded package.
func TestSourceIsOneCUEFile(t *testing.T) {
	src, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	ctx := cuecontext.New()
	v := ctx.CompileBytes(src, cuelang.Filename("facets.cue"))
	if err := v.Err(); err != nil {
		t.Fatalf("merged schema does not compile: %v\n%s", err, src)
	}
	for _, d := range []Definition{Profile, Role, Manifest} {
		def := v.LookupPath(cuelang.ParsePath(string(d)))
		if !def.Exists() {
			t.Errorf("merged schema lacks %s", d)
			continue
		}
		// #Role has no required fields; the others must reject {}.
		ok := def.Unify(ctx.CompileString("{}")).Validate(cuelang.Concrete(true)) == nil
		if ok != (d == Role) {
			t.Errorf("%s: empty document valid=%v", d, ok)
		}
	}
}

package compiler

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/facets-dev/facets/profiles"
)

// FuzzRoleFrontmatter feeds arbitrary role files through frontmatter
// splitting, schema validation and the line-reader cross-check, in a pack
// and in the global layer. It never panics, every diagnostic is complete
// and names the role, and a file is either usable, ignored with a warning,
// or rejected with an error; never dropped silently.
func FuzzRoleFrontmatter(f *testing.F) {
	for _, seed := range []string{
		"---\ndescription: Reviews code\ntools: read, bash\nspawning: false\n---\nReview.\n",
		"---\nname: x\ncli: claude\n---\n",
		"---\ntools: [a, b]\nthinking: huge\nauto-exit: True\n---\n",
		"---\ndescription: \"a\ntools: read\"\n---\n",
		"---\r\ndescription: d\r\n---\r\nB\r\n",
		"\uFEFF---\ndescription: d\n---\n",
		"---\n\n---\n",
		"---\ndescription: a: b\n---\n",
		"---\n- a\n---\n",
		"---\ntools: |\n  read\n---\n",
		"---\nskill: a,,b\nskills: c\n---\n",
		"---\n&a x: *a\n<<: {y: 1}\n---\n",
		"no frontmatter",
		"---\ndescription: \xff\n---\n\xfe",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
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
		def, diags := p.parse(profiles.RoleFile{Layer: layer, Path: path, Stem: "role", Data: data})
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("parsing %d bytes took %v", len(data), d) // a pathological input must not stall a compile
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, d := range diags {
			if d.Code == "" || d.Message == "" || d.File != path || d.Subject != def.name {
				t.Fatalf("incomplete diagnostic %+v (role %q)", d, def.name)
			}
			if d.Line < 0 || d.Line > lines || d.Column < 0 {
				t.Fatalf("diagnostic %s at %d:%d outside a %d-line file", d.Code, d.Line, d.Column, lines)
			}
		}
		switch {
		case def.valid:
			if HasErrors(diags) {
				t.Fatalf("valid role with errors: %v", diags)
			}
			r := def.role
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

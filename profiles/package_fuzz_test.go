package profiles

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// FuzzReadPackage feeds a role pack's package.json to readPackage. It must
// never panic; every problem is a warning about that file that names it;
// the bytes read are kept as they are (the manifest digests them); and the
// identity is exactly the string "name" and "version" of the object, with a
// warning for each of them that is present but not a string, and one for a
// document that is not a JSON object.
func FuzzReadPackage(f *testing.F) {
	for _, seed := range []string{
		`{"name": "@acme/roles", "version": "1.2.3", "pi": {"roles": ["./roles"]}}`,
		`{"name": "x"}`,
		`{"name": null, "version": 3}`,
		`{"name": ["a"], "version": {"v": 1}, "name": "last"}`,
		`{"name": "\ud800", "version": "\u0000"}`,
		"\xEF\xBB\xBF{\"name\": \"bom\"}",
		`[]`, `null`, `"name"`, `{`, ``, `{"name": "a"} {}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "package.json")
		safefiletest.Put(t, path, data)
		d := &roleDiscovery{packages: map[string]packageIdentity{}}
		id := d.readPackage(path)
		for _, p := range d.problems {
			if p.File != path || p.Code != "invalid-package-json" || !strings.Contains(p.Message, path) || p.Hint == "" {
				t.Fatalf("problem does not name the file or say how to fix it: %+v", p)
			}
		}
		if len(d.list.Packages) != 1 || d.list.Packages[0].Path != path || !bytes.Equal(d.list.Packages[0].Data, data) {
			t.Fatalf("package file kept as %+v, want the %d bytes read", d.list.Packages, len(data))
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(data, &meta) != nil {
			if id != (packageIdentity{}) || len(d.problems) != 1 {
				t.Fatalf("unparsable package.json gave %+v and %d problems, want none and one", id, len(d.problems))
			}
			return
		}
		var want packageIdentity
		warnings := 0
		for key, dst := range map[string]*string{"name": &want.name, "version": &want.version} {
			raw, ok := meta[key]
			if !ok {
				continue
			}
			if json.Unmarshal(raw, dst) != nil || string(raw) == "null" {
				*dst = ""
				warnings++
			}
		}
		if id != want || len(d.problems) != warnings {
			t.Fatalf("identity %+v with %d problems, want %+v with %d:\n%q", id, len(d.problems), want, warnings, data)
		}
	})
}

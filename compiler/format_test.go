package compiler

import (
	"bytes"
	"testing"
)

// TestWriteDiagnosticsJSONEmpty pins that a clean run prints an empty JSON
// array, never null, for both a nil and an empty slice.
func TestWriteDiagnosticsJSONEmpty(t *testing.T) {
	for name, ds := range map[string][]Diagnostic{"nil": nil, "empty": {}} {
		var b bytes.Buffer
		if err := WriteDiagnostics(&b, FormatJSON, "/", ds); err != nil {
			t.Fatal(err)
		}
		if b.String() != "[]\n" {
			t.Errorf("%s: got %q, want %q", name, b.String(), "[]\n")
		}
	}
}

// TestNameFileOnce: the file a diagnostic's prefix names is not repeated,
// absolute, inside its message.
func TestNameFileOnce(t *testing.T) {
	const f = "/abs/pack/roles/helper.md"
	for _, tc := range []struct{ msg, want string }{
		{`Role "helper" must declare a description in ` + f, `Role "helper" must declare a description`},
		{`Role "r" has an ambiguous model declaration in ` + f + `: YAML reads "a"`, `Role "r" has an ambiguous model declaration: YAML reads "a"`},
		{"Role definition has no frontmatter and is ignored: " + f, "Role definition has no frontmatter and is ignored: roles/helper.md"},
		{"unrelated /abs/other.md", "unrelated /abs/other.md"},
	} {
		if got := NameFileOnce(tc.msg, f, "roles/helper.md"); got != tc.want {
			t.Errorf("NameFileOnce(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

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

package cue

import "testing"

// TestColumnsCountBytes: every finding's column counts bytes, as CUE's own
// positions do, also where facets computes it itself (JSON syntax errors,
// a trailing comma, invalid UTF-8), so an editor can convert it.
func TestColumnsCountBytes(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src string
		code      string
		line, col int
	}{
		// "é😀" is 6 bytes, 2 characters.
		{"schema error", `{"description": "é😀", "version": 2}`, CodeInvalidValue, 1, 38},
		{"syntax error", `{"description": "é😀" "version": 1}`, CodeSyntax, 1, 26},
		{"trailing comma", `{"description": "é😀",}`, CodeSyntax, 1, 25},
		{"invalid UTF-8", "{\"description\": \"é😀\xff\"}", CodeEncoding, 1, 24},
	} {
		res := s.ValidateJSON(Profile, "config.json", []byte(tc.src))
		found := false
		for _, f := range res.Findings {
			if f.Code == tc.code {
				found = true
				if f.Line != tc.line || f.Column != tc.col {
					t.Errorf("%s: %s at %d:%d, want %d:%d", tc.name, f.Code, f.Line, f.Column, tc.line, tc.col)
				}
			}
		}
		if !found {
			t.Errorf("%s: no %s finding in %+v", tc.name, tc.code, res.Findings)
		}
	}
}

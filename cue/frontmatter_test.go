package cue

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFrontmatterEdgeFindings covers frontmatter inputs that once slipped
// through: errors under quoted (hyphenated) keys, YAML syntax errors that
// carry their position only in the message text, and lone carriage returns
// that crash the YAML decoder of cuelang.org/go v0.17.1.
func TestFrontmatterEdgeFindings(t *testing.T) {
	s := mustLoad(t)
	for _, tc := range []struct {
		name string
		yaml string
		want []string // "line:col code field"
	}{
		{"hyphenated keys", "auto-exit: \"true\"\nsystem-prompt: prepend\nsession-mode: solo\n",
			[]string{"2:12 invalid-value auto-exit", "3:16 invalid-value system-prompt", "4:15 invalid-value session-mode"}},
		{"yaml syntax position from text", "name: a\ndescription: Reviews: code\n", []string{"3:1 syntax "}},
		{"lone carriage return", "name: a\rtools: read\n", []string{"2:8 syntax "}},
		{"crlf line is fine", "name: a\r\ntools: read\n", nil},
		{"trailing carriage return is fine", "tools: read\r", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := s.ValidateFrontmatter(Role, "r.md", []byte(tc.yaml), 2)
			var got []string
			for _, f := range res.Findings {
				got = append(got, fmt.Sprintf("%d:%d %s %s", f.Line, f.Column, f.Code, f.Field))
				if f.Message == "" || f.Hint == "" {
					t.Errorf("finding without message or hint: %+v", f)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if res.OK() != (len(tc.want) == 0) {
				t.Errorf("OK() = %v", res.OK())
			}
		})
	}
}

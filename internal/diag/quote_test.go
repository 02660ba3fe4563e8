package diag

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{`say "hi"`, `"say "hi""`},
		{"a\nb\tc", `"a\nb\tc"`},
		{`back\slash`, `"back\slash"`},
		{"bell\a", `"bell\u0007"`},
		{strings.Repeat("é", 50), `"` + strings.Repeat("é", 39) + `…" (50 characters)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

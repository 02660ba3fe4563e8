package termesc

import "testing"

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain/path.json", "plain/path.json"},
		{"café — ok", "café — ok"},
		{`back\slash`, `back\slash`},
		{"a\nb", `a\nb`},
		{"a\r\tb", `a\r\tb`},
		{"\x1b[31mred\x07", `\x1b[31mred\x07`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1\u0085\u009b", `c1\u0085\u009b`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"\xe2\x82", `\xe2\x82`},
		{"\ufffd kept", "\ufffd kept"},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzEscape: the result never holds a control character or invalid UTF-8.
func FuzzEscape(f *testing.F) {
	f.Add("a\nb\x1b[0m\xff\u0085")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !clean(out) {
			t.Fatalf("Escape(%q) = %q still holds a control character or invalid UTF-8", s, out)
		}
	})
}

package herdr

import (
	"testing"
	"unicode/utf8"
)

// FuzzParseVersion feeds parseVersion what `herdr --version` or a server's
// status may print. It must never panic; a refusal is valid UTF-8 text; an
// accepted version has no negative part, prints as MAJOR.MINOR.PATCH and
// parses back from that, bare or after "herdr ".
func FuzzParseVersion(f *testing.F) {
	for _, seed := range []string{"herdr 0.8.2", "0.8.2", "v1.2.3-rc.1+build", "herdr", "", "1.2", "1.2.3.4", "herdr v0.08.010", "9223372036854775808.0.0", "-1.0.0", "\xff.1.1", "1.+2.3"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseVersion(s)
		if err != nil {
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("error is not valid UTF-8: %q", err.Error())
			}
			return
		}
		if v.Major < 0 || v.Minor < 0 || v.Patch < 0 {
			t.Fatalf("parseVersion(%q) = %v, a negative part", s, v)
		}
		for _, again := range []string{v.String(), "herdr " + v.String()} {
			if back, err := parseVersion(again); err != nil || back != v {
				t.Fatalf("parseVersion(%q) = %v; %q parses to %v, %v", s, v, again, back, err)
			}
		}
	})
}

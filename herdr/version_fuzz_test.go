package herdr

import (
	"testing"
	"unicode/utf8"
)

// FuzzParseVersion feeds parseVersion what `herdr --version` or a server's
// status may print. It must never panic; a refusal is valid UTF-8 text; an
// accepted version has no negative part, prints as MAJOR.MINOR.PATCH[-PRE]
// in valid UTF-8 (it goes into messages) and parses back from that, bare or
// after "herdr "; it is not older than itself, and its release is older
// than a preview of it.
func FuzzParseVersion(f *testing.F) {
	for _, seed := range []string{"herdr 0.8.2", "0.8.2", "v1.2.3-rc.1+build", "herdr", "", "1.2", "1.2.3.4", "herdr v0.08.010", "9223372036854775808.0.0", "-1.0.0", "\xff.1.1", "1.+2.3", "herdr 0.9.3 (abc1234)", "0.9.3-preview.7", "0.8.3+build.1", "0.9.0-preview.2026-09-09-b9ce9686", "1.2.3-\xff"} {
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
		if !utf8.ValidString(v.String()) {
			t.Fatalf("parseVersion(%q) = %q, not valid UTF-8", s, v.String())
		}
		for _, again := range []string{v.String(), "herdr " + v.String()} {
			if back, err := parseVersion(again); err != nil || back != v {
				t.Fatalf("parseVersion(%q) = %v; %q parses to %v, %v", s, v, again, back, err)
			}
		}
		release, preview := v, v
		release.Pre, preview.Pre = "", "preview.1"
		if v.Less(v) || !release.Less(preview) || preview.Less(release) {
			t.Fatalf("parseVersion(%q) = %v: Less is not a strict order around it", s, v)
		}
	})
}

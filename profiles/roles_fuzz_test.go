package profiles

import (
	"regexp"
	"strings"
	"testing"
)

// The pi-herdr-agents envelope expressions, used as an oracle: RE2 has the
// same lazy-match semantics as the JavaScript originals for these patterns.
var (
	frontmatterRE = regexp.MustCompile(`(?s)^---\n(.*?)\n---`)
	stripRE       = regexp.MustCompile(`(?s)^---\n.*?\n---\n*`)
)

// FuzzSplitFrontmatter checks SplitFrontmatter against the regular
// expressions pi-herdr-agents parses frontmatter with, and FrontmatterLine
// against its definition.
func FuzzSplitFrontmatter(f *testing.F) {
	for _, seed := range []string{
		"---\nname: a\n---\nBody\n", "---\n\n---\n", "---\n---\n", "---\na\n----x\n\n\nB",
		"---\r\na: b\r\n---\r\n", "\uFEFF---\n", "", "---\n", "---\na: 1\n---", " ---\n\n---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		yaml, start, body, ok := SplitFrontmatter(src)
		m := frontmatterRE.FindSubmatch(src)
		if ok != (m != nil) {
			t.Fatalf("ok = %v, reference match = %v", ok, m != nil)
		}
		if !ok {
			return
		}
		if start != 2 || string(yaml) != string(m[1]) {
			t.Fatalf("yaml = %q (line %d), reference %q", yaml, start, m[1])
		}
		if want := strings.TrimSpace(stripRE.ReplaceAllString(string(src), "")); body != want {
			t.Fatalf("body = %q, reference %q", body, want)
		}
		for _, key := range []string{"tools", "name", "cli"} {
			v, line, found := FrontmatterLine(yaml, key)
			lines := strings.Split(string(yaml), "\n")
			if line > 0 && (line > len(lines) || !strings.HasPrefix(lines[line-1], key+":")) {
				t.Fatalf("FrontmatterLine(%q) line %d does not declare it", key, line)
			}
			if found != (v != "") || v != strings.TrimSpace(v) {
				t.Fatalf("FrontmatterLine(%q) = %q, %v", key, v, found)
			}
		}
	})
}

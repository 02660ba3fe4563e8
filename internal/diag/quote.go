package diag

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxQuoted is how many characters of a value Quote shows before "…".
const MaxQuoted = 40

// Quote shows a value from a file inside a message: in double quotes, a
// quote inside it left as it is (no \" to read past), a line break or tab
// as \n or \t once, other control characters as \u escapes, and a value
// longer than MaxQuoted characters cut with "…" and its length given.
func Quote(s string) string {
	n := utf8.RuneCountInString(s)
	short := s
	if n > MaxQuoted {
		r := []rune(s)
		short = string(r[:MaxQuoted-1])
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range short {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError || unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	if n > MaxQuoted {
		b.WriteString("…")
	}
	b.WriteByte('"')
	if n > MaxQuoted {
		return fmt.Sprintf("%s (%d characters)", b.String(), n)
	}
	return b.String()
}

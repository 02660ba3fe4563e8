// Package termesc makes text that came from the filesystem or a file safe
// to print on a terminal: control characters and invalid UTF-8 are shown
// as escapes, so a crafted file name cannot send escape sequences or forge
// an extra output line.
package termesc

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every C0 control (newline, CR, tab, ESC, BEL, …),
// DEL, C1 control and invalid UTF-8 byte written as a Go-style escape
// (\n, \x1b, \u0085); everything else, including a backslash, is kept as
// is, so ordinary text and paths print unchanged.
func Escape(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean reports whether s is valid UTF-8 without control characters, the
// common case, which Escape returns unchanged.
func clean(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return false
		}
		i += size
	}
	return true
}

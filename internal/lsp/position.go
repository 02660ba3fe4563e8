package lsp

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// lineIndex converts between check's positions (1-based lines, 1-based
// byte columns) and LSP's (0-based lines, UTF-16 code unit columns) in one
// buffer.
type lineIndex struct {
	text   string
	starts []int // byte offset of each line
}

func newLineIndex(text string) *lineIndex {
	starts := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return &lineIndex{text: text, starts: starts}
}

// line returns the text of 0-based line n without its line ending.
func (x *lineIndex) line(n int) string {
	if n < 0 || n >= len(x.starts) {
		return ""
	}
	end := len(x.text)
	if n+1 < len(x.starts) {
		end = x.starts[n+1] - 1
	}
	return strings.TrimSuffix(x.text[x.starts[n]:end], "\r")
}

// position converts a check position; line 0 (the whole file) is the
// start of the buffer, column 0 the start of the line, a position past
// the end is clamped to it, and one inside a multi-byte character moves
// to the character's start.
func (x *lineIndex) position(line, col int) position {
	if line <= 0 {
		return position{}
	}
	n := min(line-1, len(x.starts)-1)
	l := x.line(n)
	b := min(max(col-1, 0), len(l))
	for b > 0 && b < len(l) && !utf8.RuneStart(l[b]) {
		b-- // a column inside a character means the character
	}
	return position{Line: n, Character: utf16Len(l[:b])}
}

// lineEnd is the end of the line holding p.
func (x *lineIndex) lineEnd(p position) position {
	return position{Line: p.Line, Character: max(p.Character, utf16Len(x.line(p.Line)))}
}

// offset converts an LSP position to a byte offset in the buffer, clamped
// to the line and the buffer.
func (x *lineIndex) offset(p position) int {
	if p.Line < 0 {
		return 0
	}
	if p.Line >= len(x.starts) {
		return len(x.text)
	}
	l := x.line(p.Line)
	units := 0
	for i, r := range l {
		if units >= p.Character {
			return x.starts[p.Line] + i
		}
		units += utf16RuneLen(r)
	}
	return x.starts[p.Line] + len(l)
}

// utf16Len counts UTF-16 code units; an invalid byte counts as the one
// unit of the U+FFFD it decodes to.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16RuneLen(r)
	}
	return n
}

func utf16RuneLen(r rune) int {
	if r == utf8.RuneError {
		return 1
	}
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
}

// applyChange applies one didChange content change to text.
func applyChange(text string, c contentChange) string {
	if c.Range == nil {
		return c.Text
	}
	x := newLineIndex(text)
	start, end := x.offset(c.Range.Start), x.offset(c.Range.End)
	if end < start {
		start, end = end, start
	}
	return text[:start] + c.Text + text[end:]
}

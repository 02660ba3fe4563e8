// Package frontmatter splits a role file into its YAML frontmatter and body,
// for profiles (which reads role files) and for the cue tests that seed
// their fuzzing with the repository's roles (cue may not import profiles).
package frontmatter

import (
	"bytes"
	"strings"
)

// Split splits a role file the way pi-herdr-agents does: the file must
// start with "---\n", and the block ends at the first later "\n---" even if
// more characters follow on that line. yaml excludes both markers and
// begins on line startLine of the file; body is the trimmed rest after the
// closing marker and any newlines following it.
func Split(src []byte) (yaml []byte, startLine int, body string, ok bool) {
	if !bytes.HasPrefix(src, []byte("---\n")) {
		return nil, 0, "", false
	}
	rest := src[4:]
	i := bytes.Index(rest, []byte("\n---"))
	if i < 0 {
		return nil, 0, "", false
	}
	after := bytes.TrimLeft(rest[i+4:], "\n")
	return rest[:i], 2, strings.TrimSpace(string(after)), true
}

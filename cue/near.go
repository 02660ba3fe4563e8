package cue

import (
	"slices"
	"strings"
)

// NearMatches returns the candidates that look like a misspelling of name:
// within two edits (ignoring case, as the unknown-field hint measures) or
// containing it, sorted and without duplicates.
func NearMatches(name string, candidates []string) []string {
	var out []string
	ln := strings.ToLower(name)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if c != name && (distance(ln, lc) <= 2 || ln != "" && strings.Contains(lc, ln)) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Package compiler resolves discovered profiles, roles and MAIN.md files into
// a catalog, reports diagnostics, and encodes the frozen launch manifest.
package compiler

import (
	"cmp"
	"slices"
)

// Severity ranks a diagnostic.
type Severity string

// Diagnostic severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// Diagnostic is one finding about the input, located in a file where
// possible. Line and Column are 1-based; zero means the whole file.
type Diagnostic struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	Column   int      `json:"column,omitempty"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint,omitempty"`
	// Subject names the profile or role the diagnostic is about, so an
	// exact-name compile can report the matching diagnostic.
	Subject string `json:"subject,omitempty"`
}

// HasErrors reports whether any diagnostic is an error.
func HasErrors(ds []Diagnostic) bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == Error })
}

// Strict returns a copy of ds with warnings promoted to errors.
func Strict(ds []Diagnostic) []Diagnostic {
	out := slices.Clone(ds)
	for i := range out {
		if out[i].Severity == Warning {
			out[i].Severity = Error
		}
	}
	return out
}

// SortDiagnostics orders diagnostics by file, position, code and message and
// drops exact duplicates, so output is deterministic.
func SortDiagnostics(ds []Diagnostic) []Diagnostic {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(ds)
}

// Package compiler resolves discovered profiles, roles and MAIN.md files into
// a catalog, reports diagnostics, and encodes the frozen launch manifest.
package compiler

import (
	"cmp"
	"slices"

	"github.com/facets-dev/facets/internal/diag"
)

// Severity ranks a diagnostic; see diag.Severity.
type Severity = diag.Severity

// Diagnostic severities.
const (
	Error   = diag.Error
	Warning = diag.Warning
	Info    = diag.Info
)

// Diagnostic is one finding about the input: the type discovery and
// validation report and the manifest records; the alias keeps the
// compiler's many diagnostics reading as plain Diagnostic.
type Diagnostic = diag.Diagnostic

// Related is a file a diagnostic refers to (see diag.Related).
type Related = diag.Related

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
	return slices.CompactFunc(ds, func(a, b Diagnostic) bool {
		return a.Severity == b.Severity && a.Code == b.Code && a.File == b.File && a.Line == b.Line && a.Column == b.Column &&
			a.Message == b.Message && a.Hint == b.Hint && a.Subject == b.Subject && slices.Equal(a.Related, b.Related)
	})
}

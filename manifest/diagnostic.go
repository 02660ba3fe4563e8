package manifest

import "github.com/facets-dev/facets/diag"

// Severity ranks a diagnostic; see diag.Severity.
type Severity = diag.Severity

// Diagnostic severities.
const (
	Error   = diag.Error
	Warning = diag.Warning
	Info    = diag.Info
)

// Diagnostic is one finding about the input; see diag.Diagnostic. The
// manifest records the compile's diagnostics, so it names the type too.
type Diagnostic = diag.Diagnostic

// Package diag defines the one positioned diagnostic that every layer
// reports: discovery (profiles), schema validation (cue) and the compiler
// produce it, and the manifest records it. It sits below them all so none
// has to convert another's type.
package diag

// Severity ranks a diagnostic.
type Severity string

// Diagnostic severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// CodeUntrustedProject is the note for a project folder left out because
// the project is not trusted: check prints it, and the Pi startup plan
// turns it into its one line in Pi.
const CodeUntrustedProject = "untrusted-project"

// Diagnostic is one finding about the input, located in a file where
// possible. Line and Column are 1-based; zero means the whole file. Column
// counts bytes, as CUE's positions and most compilers' do (facets lsp
// converts it to the editor's UTF-16 units). Its JSON form is the
// manifest's diagnostics entry.
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
	// Related names other files the finding is about, such as the
	// definition a nearer one masks, so an editor can link to them.
	Related []Related `json:"related,omitempty"`
}

// Related is a file a diagnostic refers to, and why.
type Related struct {
	File string `json:"file"`
	Note string `json:"note"`
}

package compiler

import "testing"

// TestSortDiagnosticsKeepsDistinctRelated: only exact duplicates are
// dropped; two findings that differ only in what they relate to are both
// kept.
func TestSortDiagnosticsKeepsDistinctRelated(t *testing.T) {
	d := Diagnostic{Severity: Warning, Code: "masked-profile", File: "/a", Message: "m"}
	a, b := d, d
	a.Related = []Related{{File: "/x", Note: "n"}}
	b.Related = []Related{{File: "/y", Note: "n"}}
	if got := SortDiagnostics([]Diagnostic{a, a, b}); len(got) != 2 {
		t.Errorf("got %d diagnostics, want 2 (one duplicate dropped): %+v", len(got), got)
	}
}

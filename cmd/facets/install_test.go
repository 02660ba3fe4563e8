package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestOnlyFacetsIsInstallable runs `go list ./...` from the module root:
// every main package it lists is a binary that `go install ./...` (which
// pre-commit's language: golang runs for the facets-check hook) puts on
// the user's PATH, so cmd/facets must be the only one.
func TestOnlyFacetsIsInstallable(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	mains := strings.Fields(string(out))
	if want := []string{"github.com/facets-dev/facets/cmd/facets"}; !slices.Equal(mains, want) {
		t.Errorf("go install ./... installs %v, want only %v: give a developer program the ignore build tag and run it with go run FILE.go", mains, want)
	}
}

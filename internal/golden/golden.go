// Package golden compares test output with golden files and rewrites them
// on request. The one switch for every package is the environment variable
// FACETS_UPDATE=1 (`FACETS_UPDATE=1 go test ./...`): an environment
// variable reaches every test binary of a multi-package run, which a test
// flag such as -update does not.
package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/facets-dev/facets/internal/envvar"
)

// EnvVar is the environment variable that makes tests rewrite their golden
// files instead of comparing with them.
const EnvVar = envvar.Update

// Update reports whether golden files are to be rewritten (FACETS_UPDATE=1).
func Update() bool { return os.Getenv(EnvVar) == "1" }

// Check compares got with the golden file at path, or rewrites the file
// (creating its directory) when Update is on.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with %s=1 to create it)", err, EnvVar)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale; rerun with %s=1 if the change is intended (-want +got):\n%s", path, EnvVar, diff)
	}
}

// Section compares got with the file called name in the txtar archive a,
// read from path, or sets (or adds) it when Update is on; SaveArchive then
// writes the archive back.
func Section(t testing.TB, path string, a *txtar.Archive, name, got string) {
	t.Helper()
	for i, file := range a.Files {
		if file.Name != name {
			continue
		}
		if Update() {
			a.Files[i].Data = []byte(got)
			return
		}
		if diff := cmp.Diff(string(file.Data), got); diff != "" {
			t.Errorf("%s: %s mismatch (-want +got):\n%s", path, name, diff)
		}
		return
	}
	if Update() {
		a.Files = append(a.Files, txtar.File{Name: name, Data: []byte(got)})
		return
	}
	t.Errorf("%s: missing section %s; run with %s=1", path, name, EnvVar)
}

// SaveArchive writes a back to path when Update is on.
func SaveArchive(t testing.TB, path string, a *txtar.Archive) {
	t.Helper()
	if Update() {
		if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

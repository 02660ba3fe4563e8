package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	r.fatal = true
}

func (r *recorder) Fatal(args ...any) {
	r.errors = append(r.errors, fmt.Sprint(args...))
	r.fatal = true
}

func TestCheck(t *testing.T) {
	t.Setenv(EnvVar, "")
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := &recorder{TB: t}
	Check(r, path, []byte("same\n"))
	if len(r.errors) != 0 {
		t.Errorf("equal output reported: %q", r.errors)
	}

	r = &recorder{TB: t}
	Check(r, path, []byte("changed\n"))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "FACETS_UPDATE=1") || !strings.Contains(r.errors[0], "changed") {
		t.Errorf("a difference must be reported with the diff and the update switch, got %q", r.errors)
	}

	r = &recorder{TB: t}
	Check(r, filepath.Join(t.TempDir(), "missing.golden"), []byte("x"))
	if !r.fatal || !strings.Contains(r.errors[0], "FACETS_UPDATE=1") {
		t.Errorf("a missing golden file must fail and name the switch, got %q", r.errors)
	}
}

func TestCheckUpdate(t *testing.T) {
	t.Setenv(EnvVar, "1")
	path := filepath.Join(t.TempDir(), "new", "x.golden")
	r := &recorder{TB: t}
	Check(r, path, []byte("fresh\n"))
	if len(r.errors) != 0 {
		t.Fatalf("update failed: %q", r.errors)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "fresh\n" {
		t.Errorf("golden file = %q, %v; want it rewritten", b, err)
	}
}

func TestSection(t *testing.T) {
	t.Setenv(EnvVar, "")
	a := txtar.Parse([]byte("-- want --\nsame\n"))

	r := &recorder{TB: t}
	Section(r, "f.txtar", a, "want", "same\n")
	if len(r.errors) != 0 {
		t.Errorf("equal section reported: %q", r.errors)
	}

	r = &recorder{TB: t}
	Section(r, "f.txtar", a, "want", "changed\n")
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "f.txtar: want mismatch") || !strings.Contains(r.errors[0], "changed") {
		t.Errorf("a difference must be reported with the file, section and diff, got %q", r.errors)
	}

	r = &recorder{TB: t}
	Section(r, "f.txtar", a, "want/other", "x")
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "missing section want/other") || !strings.Contains(r.errors[0], "FACETS_UPDATE=1") {
		t.Errorf("a missing section must be reported with the update switch, got %q", r.errors)
	}
}

func TestSectionUpdate(t *testing.T) {
	t.Setenv(EnvVar, "1")
	path := filepath.Join(t.TempDir(), "f.txtar")
	a := txtar.Parse([]byte("comment\n-- want --\nold\n"))
	r := &recorder{TB: t}
	Section(r, path, a, "want", "new\n")
	Section(r, path, a, "want/added", "more\n")
	SaveArchive(r, path, a)
	if len(r.errors) != 0 {
		t.Fatalf("update failed: %q", r.errors)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "comment\n-- want --\nnew\n-- want/added --\nmore\n" {
		t.Errorf("archive = %q, %v; want both sections rewritten", b, err)
	}
}

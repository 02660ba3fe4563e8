package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/facets-dev/facets/internal/diag"
)

// LayoutProblems finds entries whose names nearly match a folder or file
// facets reads (profile/ or Profiles/ for profiles/, agent/ for agents/,
// main.md for MAIN.md). facets would skip them without a word, so each is
// reported with the name it probably meant. Project directories are only
// looked at when the project is trusted, as nothing else is read there.
func LayoutProblems(env Env, trusted bool) []diag.Diagnostic {
	type want struct {
		dir   string
		names []string
	}
	var wants []want
	if !env.ProjectOnly {
		wants = append(wants,
			want{env.AgentDir, []string{"facets", "agents"}},
			want{filepath.Join(env.AgentDir, "facets"), []string{"profiles", "MAIN.md"}})
	}
	if trusted {
		for _, d := range env.ProjectDirs() {
			names := []string{"facets"}
			if d == env.Cwd {
				names = append(names, "agents") // project roles are read from the cwd only
			}
			wants = append(wants,
				want{filepath.Join(d, ".pi"), names},
				want{filepath.Join(d, ".pi", "facets"), []string{"profiles", "MAIN.md"}})
		}
	}
	var out []diag.Diagnostic
	seen := map[string]bool{}
	for _, w := range wants {
		des, err := os.ReadDir(w.dir)
		if err != nil {
			continue // a missing directory is normal; an unreadable one is reported where it is read
		}
		for _, name := range w.names {
			if _, err := os.Stat(filepath.Join(w.dir, name)); err == nil {
				continue // the real one exists (or the filesystem ignores case)
			}
			for _, de := range des {
				p := filepath.Join(w.dir, de.Name())
				if seen[p] || p == env.AgentDir || !nearName(de.Name(), name) {
					continue
				}
				seen[p] = true
				out = append(out, diag.Diagnostic{Severity: diag.Warning, File: p, Code: "misnamed-path",
					Message: fmt.Sprintf("%q is not read by facets; did you mean %q?", de.Name(), name),
					Hint:    fmt.Sprintf("rename it to %s", filepath.Join(w.dir, name))})
			}
		}
	}
	return out
}

// nearName reports whether got is a likely misspelling of want: the same
// name in another case, or one letter added, dropped or changed.
func nearName(got, want string) bool {
	if got == want {
		return false
	}
	if strings.EqualFold(got, want) {
		return true
	}
	a, b := []rune(strings.ToLower(got)), []rune(strings.ToLower(want))
	if len(a) < len(b) {
		a, b = b, a
	}
	switch len(a) - len(b) {
	case 0:
		diff := 0
		for i := range a {
			if a[i] != b[i] {
				diff++
			}
		}
		return diff == 1
	case 1:
		for i := range b {
			if a[i] != b[i] {
				return string(a[i+1:]) == string(b[i:])
			}
		}
		return true
	}
	return false
}

package profiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/facets-dev/facets/internal/diag"
)

// MainFile is one non-empty MAIN.md orchestration-policy file.
type MainFile struct {
	Path    string
	Scope   Scope
	Content string // trimmed
	Raw     []byte
}

// MainFiles reads <agentDir>/facets/MAIN.md and, when trusted, every
// <dir>/.pi/facets/MAIN.md from the root down to the working directory.
// Missing and blank files are skipped; other problems are reported and do
// not stop the remaining files.
func MainFiles(env Env, trusted bool) ([]MainFile, []diag.Diagnostic) {
	type cand struct {
		path  string
		scope Scope
	}
	var cands []cand
	if !env.ProjectOnly {
		cands = append(cands, cand{filepath.Join(env.AgentDir, "facets", "MAIN.md"), Global})
	}
	if trusted {
		for _, dir := range env.ProjectDirs() {
			cands = append(cands, cand{filepath.Join(dir, ".pi", "facets", "MAIN.md"), Project})
		}
	}
	var files []MainFile
	var probs []diag.Diagnostic
	seen := map[string]bool{}
	for _, c := range cands {
		if seen[c.path] {
			continue
		}
		seen[c.path] = true
		if _, err := os.Lstat(c.path); errors.Is(err, fs.ErrNotExist) && !env.Overlay.has(c.path) {
			continue
		}
		b, ps := readLimited(env.Overlay, c.path, MaxMainBytes, "", "main")
		if len(ps) > 0 {
			probs = append(probs, warnings(ps)...)
			continue
		}
		if p, ok := checkText(c.path, b, "", "main"); !ok {
			probs = append(probs, warnings([]diag.Diagnostic{p})...)
			continue
		}
		content := strings.TrimSpace(string(b))
		if content == "" {
			probs = append(probs, diag.Diagnostic{Severity: diag.Info, File: c.path, Code: "empty-main",
				Message: "MAIN.md is empty and contributes nothing", Hint: "write orchestration policy or delete the file"})
			continue
		}
		files = append(files, MainFile{Path: c.path, Scope: c.scope, Content: content, Raw: b})
	}
	return files, probs
}

// warnings lowers the file-reading errors of a MAIN.md to warnings: a bad
// policy file is skipped, it does not stop the compile.
func warnings(ds []diag.Diagnostic) []diag.Diagnostic {
	for i := range ds {
		ds[i].Severity = diag.Warning
	}
	return ds
}

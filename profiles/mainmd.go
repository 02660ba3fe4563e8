package profiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
func MainFiles(env Env, trusted bool) ([]MainFile, []Problem) {
	type cand struct {
		path  string
		scope Scope
	}
	cands := []cand{{filepath.Join(env.AgentDir, "facets", "MAIN.md"), Global}}
	if trusted {
		for _, dir := range Ancestors(env.Cwd) {
			cands = append(cands, cand{filepath.Join(dir, ".pi", "facets", "MAIN.md"), Project})
		}
	}
	var files []MainFile
	var probs []Problem
	seen := map[string]bool{}
	for _, c := range cands {
		if seen[c.path] {
			continue
		}
		seen[c.path] = true
		if _, err := os.Lstat(c.path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		b, ps := readLimited(c.path, MaxMainBytes, "", "main")
		if len(ps) > 0 {
			probs = append(probs, ps...)
			continue
		}
		if p, ok := checkText(c.path, b, "", "main"); !ok {
			probs = append(probs, p)
			continue
		}
		content := strings.TrimSpace(string(b))
		if content == "" {
			probs = append(probs, Problem{Path: c.path, Code: "empty-main",
				Message: "MAIN.md is empty and contributes nothing", Hint: "write orchestration policy or delete the file"})
			continue
		}
		files = append(files, MainFile{Path: c.path, Scope: c.scope, Content: content, Raw: b})
	}
	return files, probs
}

package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CodeManifestMoved is the verify diagnostic of a snapshot that lies in
// another project than the one it was compiled in.
const CodeManifestMoved = "manifest-moved"

// movedSnapshot reports a manifest at path that was compiled in cwd (with
// agent dir agentDir) but now lies in another project: a checkout copied
// or moved after `facets compile --out` was committed. Its sources are the
// files of cwd, not of the copy, so comparing them would pass falsely. The
// manifest's project is the nearest ancestor of its directory holding .git
// or .pi; it matches when cwd is at or below it. A manifest in the agent
// dir (the global snapshot) or outside any project (a temporary file) is
// not in a project and is never moved.
func movedSnapshot(path, cwd, agentDir string) *Diagnostic {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	dir := filepath.Dir(abs)
	if agentDir != "" && within(dir, agentDir) {
		return nil
	}
	project, ok := manifestProject(dir)
	if !ok || within(cwd, project) {
		return nil
	}
	return &Diagnostic{Severity: Error, Code: CodeManifestMoved, File: path,
		Message: fmt.Sprintf("the snapshot was compiled in %s but lies in %s: it describes the files of %s, not of this copy", cwd, project, cwd),
		Hint:    fmt.Sprintf("compile it again here: facets compile -C %s --out %s", project, path)}
}

// manifestProject is the nearest directory at or above dir that holds a
// .git or a .pi entry.
func manifestProject(dir string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		for _, mark := range []string{".git", ".pi"} {
			if _, err := os.Lstat(filepath.Join(d, mark)); err == nil {
				return d, true
			}
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	r, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

package compiler

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/profiles"
)

// Formats accepted by WriteDiagnostics.
const (
	FormatText   = "text"
	FormatJSON   = "json"
	FormatGitHub = "github"
)

// WriteDiagnostics prints diagnostics in one of the formats text
// (file:line:col: severity: message, then an indented hint), json (one array)
// or github (workflow-command annotations). Paths under base are printed
// relative to it.
func WriteDiagnostics(w io.Writer, format, base string, ds []Diagnostic) error {
	rel := make([]Diagnostic, len(ds))
	r := relativizer{base: base}
	for i, d := range ds {
		file := d.File
		d.File = r.rel(d.File)
		d.Message = NameFileOnce(d.Message, file, d.File)
		rel[i] = d
	}
	switch format {
	case FormatText, "":
		for _, d := range rel {
			// Paths and messages quote file names and contents: escape
			// control characters so none reaches the terminal raw.
			if _, err := fmt.Fprintf(w, "%s: %s: %s [%s]\n", termesc.Escape(location(d)), d.Severity, termesc.Escape(d.Message), d.Code); err != nil {
				return err
			}
			if d.Hint != "" {
				if _, err := fmt.Fprintf(w, "\thint: %s\n", termesc.Escape(d.Hint)); err != nil {
					return err
				}
			}
		}
		return nil
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rel)
	case FormatGitHub:
		for _, d := range rel {
			level := map[Severity]string{Error: "error", Warning: "warning", Info: "notice"}[d.Severity]
			var props []string
			if d.File != "" {
				props = append(props, "file="+escapeProperty(d.File))
			}
			if d.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d", d.Line))
			}
			if d.Column > 0 {
				props = append(props, fmt.Sprintf("col=%d", d.Column))
			}
			props = append(props, "title="+escapeProperty("facets "+d.Code))
			msg := d.Message
			if d.Hint != "" {
				msg += "\nhint: " + d.Hint
			}
			if _, err := fmt.Fprintf(w, "::%s %s::%s\n", level, strings.Join(props, ","), escapeData(msg)); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown format %q (want text, json or github)", format)
}

func location(d Diagnostic) string {
	switch {
	case d.File == "":
		return "facets"
	case d.Line == 0:
		return d.File
	case d.Column == 0:
		return fmt.Sprintf("%s:%d", d.File, d.Line)
	}
	return fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
}

// GitHubBase is the directory --format github writes paths relative to:
// GitHub resolves an annotation's file= against the repository root, which
// in a job is $GITHUB_WORKSPACE (workspace), else the git top level of
// cwd (the nearest .git), else cwd itself. A file outside it stays
// absolute.
func GitHubBase(workspace, cwd string) string {
	if workspace != "" {
		if abs, err := filepath.Abs(workspace); err == nil {
			return abs
		}
	}
	if root, ok := profiles.FindRepositoryRoot(cwd); ok {
		return root
	}
	return cwd
}

// NameFileOnce drops from msg the " in FILE" that repeats the file the
// diagnostic's own prefix names (pi-herdr-agents' message templates end so),
// and writes any other mention of file as shown, relative.
func NameFileOnce(msg, file, shown string) string {
	if file == "" || !strings.Contains(msg, file) {
		return msg
	}
	msg = strings.ReplaceAll(msg, " in "+file+":", ":")
	msg = strings.ReplaceAll(msg, " in "+file+".", ".")
	msg = strings.TrimSuffix(msg, " in "+file)
	return strings.ReplaceAll(msg, file, shown)
}

// relativizer makes paths under base relative to it.
type relativizer struct {
	base     string
	real     string // base with symlinks resolved, once needed
	resolved bool
}

// rel is p relative to base when under it, with slashes; else p. A path
// outside base is tried once more with both sides' symlinks resolved (of p,
// its directory's): a workspace or working directory reached through a
// symlink names the files under another prefix than discovery did, and
// GitHub drops an annotation whose file= is absolute.
func (r *relativizer) rel(p string) string {
	if r.base == "" || p == "" || !filepath.IsAbs(p) {
		return p
	}
	if out, ok := relUnder(r.base, p); ok {
		return out
	}
	if !r.resolved {
		r.resolved = true
		r.real, _ = filepath.EvalSymlinks(r.base)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if r.real == "" || err != nil {
		return p
	}
	if out, ok := relUnder(r.real, filepath.Join(dir, filepath.Base(p))); ok {
		return out
	}
	return p
}

func relUnder(base, p string) (string, bool) {
	r, err := filepath.Rel(base, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// GitHub workflow commands need %, CR and LF escaped in data, plus : and ,
// in properties.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

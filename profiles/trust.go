package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/facets-dev/facets/internal/safefile"
)

// Trust is the decision whether project scopes may contribute profiles,
// skills, roles and MAIN.md files, and where it came from.
type Trust struct {
	Trusted bool
	Reason  string // "flag", "trust.json", "settings" or "default"
	Path    string // the trust.json entry or settings file that decided, if any
}

// DecideTrust decides project trust the way Pi does in a non-interactive
// run: an explicit flag wins; otherwise the nearest entry for cwd or an
// ancestor in <agentDir>/trust.json; otherwise the defaultProjectTrust
// setting in <agentDir>/settings.json, where "ask" counts as untrusted
// because nobody can answer the prompt.
func DecideTrust(env Env, flag *bool) (Trust, error) {
	if flag != nil {
		return Trust{Trusted: *flag, Reason: "flag"}, nil
	}
	trustFile := filepath.Join(env.AgentDir, "trust.json")
	entries := map[string]*bool{}
	if err := readJSONFile(trustFile, &entries); err != nil {
		return Trust{}, err
	}
	up := Ancestors(canonical(env.Cwd))
	for i := len(up) - 1; i >= 0; i-- {
		if v, ok := entries[up[i]]; ok && v != nil {
			return Trust{Trusted: *v, Reason: "trust.json", Path: up[i]}, nil
		}
	}
	settingsFile := filepath.Join(env.AgentDir, "settings.json")
	var settings struct {
		DefaultProjectTrust string `json:"defaultProjectTrust"`
	}
	if err := readJSONFile(settingsFile, &settings); err != nil {
		return Trust{}, err
	}
	switch settings.DefaultProjectTrust {
	case "always":
		return Trust{Trusted: true, Reason: "settings", Path: settingsFile}, nil
	case "never":
		return Trust{Trusted: false, Reason: "settings", Path: settingsFile}, nil
	}
	return Trust{Trusted: false, Reason: "default"}, nil
}

// SettingsError is a Pi settings file (trust.json, settings.json) that
// cannot be read or parsed. Line and Column locate a JSON error; they are
// zero for read errors.
type SettingsError struct {
	Path         string
	Line, Column int
	Err          error
}

func (e *SettingsError) Error() string { return fmt.Sprintf("parse %s: %v", e.Path, e.Err) }
func (e *SettingsError) Unwrap() error { return e.Err }

// MaxSettingsBytes caps trust.json and settings.json. Pi's own files are a
// few KiB; the cap only stops a huge or endless file from exhausting memory.
const MaxSettingsBytes = 4 << 20

// readJSONFile decodes a small JSON settings file; a missing file leaves v
// untouched.
func readJSONFile(path string, v any) error {
	b, err := safefile.ReadFile(path, MaxSettingsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &SettingsError{Path: path, Err: unwrapPath(err)}
	}
	if err := json.Unmarshal(b, v); err != nil {
		serr := &SettingsError{Path: path, Err: err}
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			serr.Line, serr.Column = lineCol(b, syn.Offset)
		case errors.As(err, &typ):
			serr.Line, serr.Column = lineCol(b, typ.Offset)
		}
		return serr
	}
	return nil
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(b []byte, off int64) (int, int) {
	off = min(max(off, 1), int64(len(b)))
	line, col := 1, 1
	for _, c := range b[:off-1] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// canonical resolves symlinks where possible, because Pi keys trust.json by
// canonical directory.
func canonical(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/facets-dev/facets/internal/safefile"
)

// Trust is the decision whether project scopes may contribute profiles,
// skills, roles and MAIN.md files, and where it came from.
type Trust struct {
	Trusted bool
	Reason  string // "flag", "pi", "trust.json", "settings" or "default"
	Path    string // the trust.json entry or settings file that decided, if any
}

// DecideTrust is the one trust decision of facets: check, compile,
// explain, the editor, the Pi startup plan and a Sub's --approve all come
// from it. A project counts as trusted only on an explicit decision:
//
//  1. flag, when non-nil (--trust/--no-trust, or Pi's --approve/--no-approve);
//  2. pi, Pi's own answer (ctx.isProjectTrusted()), when non-nil and either
//     "no" or given for a project that holds resources Pi itself asks trust
//     for (PiAsksTrust): then it is Pi's real decision (its prompt, a
//     project_trust handler, trust.json or defaultProjectTrust). For any
//     other project Pi answers "yes" by default, which is no decision;
//  3. the nearest entry for cwd or an ancestor in <agentDir>/trust.json;
//  4. defaultProjectTrust in <agentDir>/settings.json ("always"/"never");
//     "ask", the default, counts as untrusted because nobody was asked.
func DecideTrust(env Env, flag, pi *bool) (Trust, error) {
	if flag != nil {
		return Trust{Trusted: *flag, Reason: "flag"}, nil
	}
	if pi != nil && (!*pi || PiAsksTrust(env)) {
		return Trust{Trusted: *pi, Reason: "pi"}, nil
	}
	trustFile := filepath.Join(env.AgentDir, "trust.json")
	entries := map[string]*bool{}
	if err := readJSONFile(trustFile, &entries, trustShape); err != nil {
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
	if err := readJSONFile(settingsFile, &settings, settingsShape); err != nil {
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

// piTrustResources are the entries of a project's .pi folder that make Pi
// ask for a trust decision (Pi's TRUST_REQUIRING_PROJECT_CONFIG_RESOURCES).
// .pi/facets and .pi/agents are not among them.
var piTrustResources = [...]string{"settings.json", "mcp.json", "extensions", "skills", "prompts", "themes", "SYSTEM.md", "APPEND_SYSTEM.md"}

// PiAsksTrust reports whether Pi decides trust for env.Cwd at all, as Pi's
// hasTrustRequiringProjectResources does: one of piTrustResources in
// <cwd>/.pi, or a .agents/skills folder in cwd or an ancestor other than
// ~/.agents/skills. For any other project Pi calls itself trusted without
// a decision.
func PiAsksTrust(env Env) bool {
	cwd := canonical(env.Cwd)
	for _, name := range piTrustResources {
		if _, err := os.Stat(filepath.Join(cwd, ".pi", name)); err == nil {
			return true
		}
	}
	// Pi skips ~/.agents/skills, with ~ from $HOME or else the account's
	// home. Without a home facets cannot tell that folder from a project's,
	// so it counts no .agents/skills (no decision: the safe reading).
	home := env.Home
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	if home == "" {
		return false
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return false
	}
	userSkills := filepath.Join(canonical(home), ".agents", "skills")
	for _, dir := range Ancestors(cwd) {
		skills := filepath.Join(dir, ".agents", "skills")
		if skills == userSkills {
			continue
		}
		if _, err := os.Stat(skills); err == nil {
			return true
		}
	}
	return false
}

// DefaultThinkingLevel is the level Pi starts model ("provider/id") at when
// it is given no level, as for a Sub launched with --model and no
// --thinking: the model's modelThinkingLevels entry, else
// defaultThinkingLevel, from <cwd>/.pi/settings.json over
// <agentDir>/settings.json (the project file only when Pi loads it,
// projectSettings), else Pi's own default, "medium". A settings file that
// cannot be read adds nothing (Pi reports it).
func DefaultThinkingLevel(env Env, model string, projectSettings bool) string {
	type settings struct {
		DefaultThinkingLevel string            `json:"defaultThinkingLevel"`
		ModelThinkingLevels  map[string]string `json:"modelThinkingLevels"`
	}
	files := []string{filepath.Join(env.AgentDir, "settings.json")}
	if projectSettings {
		files = append([]string{filepath.Join(env.Cwd, ".pi", "settings.json")}, files...)
	}
	var all []settings // nearest first
	for _, f := range files {
		var s settings
		if readJSONFile(f, &s, settingsShape) == nil {
			all = append(all, s)
		}
	}
	for _, s := range all {
		if l := s.ModelThinkingLevels[model]; l != "" {
			return l
		}
	}
	for _, s := range all {
		if s.DefaultThinkingLevel != "" {
			return s.DefaultThinkingLevel
		}
	}
	return "medium"
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

// TrustFileShape describes what <agentDir>/trust.json must hold, for
// messages and documentation.
const TrustFileShape = `an object mapping absolute directory paths to true, false or null, e.g. {"/home/me/project": true}`

// trustShape explains a trust.json value of the wrong JSON type in terms of
// the file's shape, never of Go types.
func trustShape(doc []byte, typ *json.UnmarshalTypeError) string {
	if key, ok := firstBadTrustKey(doc); ok {
		return fmt.Sprintf("the value for %q must be true, false or null (got %s); trust.json is %s", key, jsonType(typ.Value), TrustFileShape)
	}
	return fmt.Sprintf("trust.json must be %s (got %s)", TrustFileShape, jsonType(typ.Value))
}

// firstBadTrustKey finds the first key of a trust.json object whose value
// is not true, false or null; encoding/json does not name map keys in its
// type errors.
func firstBadTrustKey(doc []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return "", false
		}
		switch string(raw) {
		case "true", "false", "null":
		default:
			return key, true
		}
	}
	return "", false
}

// settingsShape explains a settings.json value of the wrong JSON type.
func settingsShape(_ []byte, typ *json.UnmarshalTypeError) string {
	if typ.Field == "" {
		return fmt.Sprintf("settings.json must be a JSON object (got %s)", jsonType(typ.Value))
	}
	return fmt.Sprintf(`%s must be "ask", "always" or "never" (got %s)`, typ.Field, jsonType(typ.Value))
}

// jsonType names a JSON value kind as encoding/json reports it ("bool",
// "number 3", "array") in the words of the JSON spec.
func jsonType(v string) string {
	switch kind, _, _ := strings.Cut(v, " "); kind {
	case "bool":
		return "a boolean"
	case "number":
		return "a number"
	case "string":
		return "a string"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return v
}

// utf8BOM is the UTF-8 byte order mark, which Pi strips before it parses
// its JSON files (stripBom), so facets accepts it there too.
var utf8BOM = []byte("\xEF\xBB\xBF")

// readJSONFile decodes a small JSON settings file; a missing file leaves v
// untouched. A leading UTF-8 byte order mark is skipped, as Pi does; a
// value of the wrong type is explained by shape.
func readJSONFile(path string, v any, shape func([]byte, *json.UnmarshalTypeError) string) error {
	b, err := safefile.ReadFile(path, MaxSettingsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &SettingsError{Path: path, Err: unwrapPath(err)}
	}
	b = bytes.TrimPrefix(b, utf8BOM)
	if err := json.Unmarshal(b, v); err != nil {
		serr := &SettingsError{Path: path, Err: err}
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			serr.Line, serr.Column = lineCol(b, syn.Offset)
			var cause error = syn
			// A comma before the closing bracket is placed at the comma
			// and named, as in profile diagnostics.
			if at := int(syn.Offset) - 1; at > 0 && at < len(b) && (b[at] == '}' || b[at] == ']') {
				if comma := bytes.LastIndexFunc(b[:at], func(r rune) bool { return !unicode.IsSpace(r) }); comma >= 0 && b[comma] == ',' {
					serr.Line, serr.Column = lineCol(b, int64(comma)+1)
					cause = fmt.Errorf("trailing comma before '%c'", b[at])
				}
			}
			serr.Err = cause
			if filepath.Base(path) == "trust.json" {
				serr.Err = fmt.Errorf("%v; trust.json must be %s", cause, TrustFileShape)
			}
		case errors.As(err, &typ):
			serr.Line, serr.Column = lineCol(b, typ.Offset)
			serr.Err = errors.New(shape(b, typ))
		}
		return serr
	}
	return nil
}

// lineCol turns a byte offset into a 1-based line and column. An empty
// document (a file holding only a byte order mark) is at line 1, column 1.
func lineCol(b []byte, off int64) (int, int) {
	off = max(min(off, int64(len(b))), 1)
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

package profiles

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/internal/safefile"
)

// Size limits of the inputs; TypeScript Facets enforces the same ones, so a
// file accepted by one is accepted by the other.
const (
	MaxConfigBytes       = 262144 // config.json and legacy <name>.json
	MaxInstructionsBytes = 262144 // instructions.md, 65,536 × 4 bytes
	MaxInstructionsChars = 65536  // UTF-16 code units, as JavaScript counts
	MaxMainBytes         = 262144 // MAIN.md
)

// Scope names where a profile was found.
type Scope string

// Profile scopes.
const (
	Global  Scope = "global"
	Project Scope = "project"
)

// Form is how a profile is laid out on disk.
type Form string

// Profile forms.
const (
	Directory Form = "directory" // profiles/<name>/config.json
	Legacy    Form = "legacy"    // profiles/<name>.json
)

// ValidName reports whether s is a legal profile name.
// It matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$, checked by hand so that no
// regular expression is compiled at package initialization.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// File is the content of one source file.
type File struct {
	Path    string
	Content []byte
}

// Entry is one profile candidate in one scope, read from disk but not yet
// validated against the schema. An entry with Problems is invalid.
type Entry struct {
	Name         string
	Scope        Scope
	Form         Form
	Dir          string // the profile directory (directory form) or the profiles directory (legacy form)
	ConfigPath   string
	Config       []byte
	Instructions *File // instructions.md, directory form only; nil when absent
	Problems     []diag.Diagnostic
}

// ScopeProfiles is everything one profiles directory contributed.
type ScopeProfiles struct {
	Scope    Scope
	Dir      string
	Entries  []Entry           // sorted by name
	Problems []diag.Diagnostic // problems not tied to one valid-looking entry
}

// Invalid reports whether the entry failed a filesystem-level check.
func (e *Entry) Invalid() bool { return len(e.Problems) > 0 }

// ScanProfiles reads one profiles directory. A missing directory yields an
// empty result. Every subdirectory is a directory-form candidate and every
// regular *.json file a legacy candidate; a name defined in both forms is
// invalid, as is a name that breaks the naming rule.
func ScanProfiles(dir string, scope Scope) ScopeProfiles {
	return scanProfiles(dir, scope, nil)
}

// scanProfiles is ScanProfiles reading files through ov.
func scanProfiles(dir string, scope Scope, ov Overlay) ScopeProfiles {
	l := listProfiles(dir, scope, ov)
	out := ScopeProfiles{Scope: scope, Dir: dir, Problems: l.Problems, Entries: make([]Entry, l.Len())}
	for i := range out.Entries {
		out.Entries[i] = l.Entry(i)
	}
	forEach(len(out.Entries), func(i int) { ReadEntry(ov, &out.Entries[i]) })
	return out
}

// ProfileList is one profiles directory as ListProfiles lists it: the
// candidates' names and forms, sorted by name, a few dozen bytes each, from
// which Entry builds the entry to read (so a large tree's paths and entries
// are never all held at once).
type ProfileList struct {
	Scope    Scope
	Dir      string
	Problems []diag.Diagnostic // problems not tied to one valid-looking entry
	items    []listedProfile
}

// listedProfile is one name a profiles directory defines, as a directory,
// a legacy <name>.json, or (invalid) both.
type listedProfile struct {
	name        string
	dir, legacy bool
}

// Len is the number of entries listed.
func (l *ProfileList) Len() int { return len(l.items) }

// Name is the name of the i-th entry, Entry(i).Name without building it.
func (l *ProfileList) Name(i int) string { return l.items[i].name }

// ConfigPath is the config file of the i-th entry, Entry(i).ConfigPath
// without building the rest.
func (l *ProfileList) ConfigPath(i int) string {
	it := l.items[i]
	if it.dir {
		return filepath.Join(l.Dir, it.name, "config.json")
	}
	return filepath.Join(l.Dir, it.name+".json")
}

// Entry builds the i-th entry, its files not read (ReadEntry reads them).
func (l *ProfileList) Entry(i int) Entry {
	it := l.items[i]
	name := it.name
	e := Entry{Name: name, Scope: l.Scope}
	legacy := filepath.Join(l.Dir, name+".json")
	e.ConfigPath = l.ConfigPath(i)
	if it.dir {
		// The directory is a prefix of the config path: one string for both.
		e.Form, e.Dir = Directory, strings.TrimSuffix(e.ConfigPath, string(filepath.Separator)+"config.json")
	} else {
		e.Form, e.Dir = Legacy, l.Dir
	}
	if !ValidName(name) {
		e.Problems = append(e.Problems, diag.Diagnostic{Severity: diag.Error, File: e.ConfigPath, Code: "invalid-profile-name", Subject: name,
			Message: "profile entry name must be 1-64 characters using letters, numbers, dot, underscore, or hyphen",
			Hint:    "rename the directory or file; start with a letter or digit"})
	}
	if it.dir && it.legacy {
		e.Problems = append(e.Problems, diag.Diagnostic{Severity: diag.Error, File: e.Dir, Code: "duplicate-profile-form", Subject: name,
			Message: fmt.Sprintf("duplicate profile '%s' is defined as both a JSON file and a directory", name),
			Hint:    fmt.Sprintf("keep either %s/config.json or %s.json, not both", name, name),
			Related: []diag.Related{{File: legacy, Note: "the legacy file defining the same profile"}}})
	}
	return e
}

// listChunk is how many directory entries listProfiles reads at a time,
// rather than the whole directory's entries at once.
const listChunk = 256

// listProfiles is scanProfiles without reading the entries' files. Every
// subdirectory is a directory-form candidate and every regular *.json
// file a legacy one.
func listProfiles(dir string, scope Scope, ov Overlay) ProfileList {
	out := ProfileList{Scope: scope, Dir: dir}
	unreadable := func(err error) {
		out.Problems = append(out.Problems, diag.Diagnostic{Severity: diag.Error, File: dir, Code: "unreadable-profiles-dir",
			Message: fmt.Sprintf("cannot read profiles directory: %v", unwrapPath(err)),
			Hint:    "check the directory's permissions"})
	}
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out
	}
	if err != nil {
		unreadable(err)
		return out
	}
	// Stat problems are reported in name order, as a sorted listing
	// would give them.
	type problem struct {
		name string
		d    diag.Diagnostic
	}
	var problems []problem
	for listed := 0; ; {
		des, err := f.ReadDir(listChunk)
		listed += len(des)
		for _, de := range des {
			p := filepath.Join(dir, de.Name())
			mode, err := entryMode(p, de)
			if err != nil {
				problems = append(problems, problem{de.Name(), diag.Diagnostic{Severity: diag.Error, File: p, Code: "unreadable-profile",
					Message: fmt.Sprintf("cannot stat profile entry: %v", unwrapPath(err)),
					Hint:    "remove the broken entry or fix its target"}})
				continue
			}
			switch {
			case mode.IsDir():
				out.items = append(out.items, listedProfile{name: de.Name(), dir: true})
			case mode.IsRegular() && strings.HasSuffix(de.Name(), ".json"):
				out.items = append(out.items, listedProfile{name: strings.TrimSuffix(de.Name(), ".json"), legacy: true})
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			unreadable(err)
			if listed == 0 {
				f.Close()
				return out
			}
			break
		}
	}
	f.Close()
	slices.SortStableFunc(problems, func(a, b problem) int { return strings.Compare(a.name, b.name) })
	for _, p := range problems {
		out.Problems = append(out.Problems, p.d)
	}
	// Unsaved buffers of profiles not on disk yet (facets lsp): a legacy
	// <name>.json, or <name>/config.json in a new directory.
	for _, p := range ov.unlisted(dir, func(rel string) bool {
		sub, file, nested := strings.Cut(rel, "/")
		return !nested && strings.HasSuffix(rel, ".json") || nested && file == "config.json" && sub != ""
	}) {
		it := listedProfile{name: strings.TrimSuffix(filepath.Base(p), ".json"), legacy: true}
		if filepath.Base(p) == "config.json" && filepath.Dir(filepath.Dir(p)) == dir {
			it = listedProfile{name: filepath.Base(filepath.Dir(p)), dir: true}
		}
		out.items = append(out.items, it)
	}
	// One item per name: a directory and a legacy file of the same name
	// merge into one (invalid) entry.
	slices.SortStableFunc(out.items, func(a, b listedProfile) int { return strings.Compare(a.name, b.name) })
	merged := out.items[:0]
	for _, it := range out.items {
		if n := len(merged); n > 0 && merged[n-1].name == it.name {
			merged[n-1].dir = merged[n-1].dir || it.dir
			merged[n-1].legacy = merged[n-1].legacy || it.legacy
			continue
		}
		merged = append(merged, it)
	}
	clear(out.items[len(merged):])
	out.items = slices.Clip(merged)
	return out
}

// ReadEntry reads the files of an entry that ListProfiles returned (its
// config.json and instructions.md, through ov), as ScanProfiles does for
// every entry; a file that cannot be used adds a problem instead.
func ReadEntry(ov Overlay, e *Entry) {
	if len(e.Problems) == 0 {
		e.Config, e.Problems = readLimited(ov, e.ConfigPath, MaxConfigBytes, e.Name, "config")
	}
	if len(e.Problems) == 0 && e.Form == Directory {
		e.Instructions, e.Problems = readInstructions(ov, filepath.Join(e.Dir, "instructions.md"), e.Name)
	}
}

// entryMode returns the type of a directory entry, following symlinks. The
// listing already knows the type of anything else, which saves a stat per
// profile.
func entryMode(p string, de fs.DirEntry) (fs.FileMode, error) {
	if t := de.Type(); t.IsDir() || t.IsRegular() {
		return t, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return fi.Mode(), nil
}

// readLimited reads a regular file of at most max bytes without ever
// reading more than max+1 bytes, so a huge file cannot exhaust memory.
func readLimited(ov Overlay, path string, max int64, subject, what string) ([]byte, []diag.Diagnostic) {
	base := filepath.Base(path)
	fail := func(code, msg, hint string) ([]byte, []diag.Diagnostic) {
		return nil, []diag.Diagnostic{{Severity: diag.Error, File: path, Code: code, Message: msg, Hint: hint, Subject: subject}}
	}
	b, err := ov.ReadFile(path, max)
	var big *safefile.TooLargeError
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, fs.ErrNotExist):
		return fail("missing-"+what, fmt.Sprintf("%s is missing", base),
			fmt.Sprintf("create %s or remove the directory", base))
	case errors.Is(err, safefile.ErrNotRegular):
		return fail("not-regular-"+what, fmt.Sprintf("%s must be a regular file", base), "replace it with a regular file")
	case errors.As(err, &big) && big.Size >= 0:
		return fail("oversized-"+what, fmt.Sprintf("%s exceeds %d bytes (it has %d)", base, max, big.Size),
			"shorten the file")
	case big != nil:
		return fail("oversized-"+what, fmt.Sprintf("%s exceeds %d bytes", base, max), "shorten the file")
	}
	return fail("unreadable-"+what, fmt.Sprintf("cannot read %s: %v", base, unwrapPath(err)), "check the file's permissions")
}

// readInstructions applies the instructions.md rules: absent means "use the
// inline field"; anything else that is wrong invalidates the profile, with
// no fallback to the inline text.
func readInstructions(ov Overlay, path, subject string) (*File, []diag.Diagnostic) {
	b, probs := readLimited(ov, path, MaxInstructionsBytes, subject, "instructions")
	if len(probs) > 0 {
		// Only now tell absent from a dangling symlink: most profiles
		// have no instructions.md, and a stat first would cost each one.
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, probs
	}
	if p, ok := checkText(path, b, subject, "instructions"); !ok {
		return nil, []diag.Diagnostic{p}
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, []diag.Diagnostic{{Severity: diag.Error, File: path, Line: 1, Column: 1, Code: "empty-instructions", Subject: subject,
			Message: "instructions.md must be a non-empty string", Hint: "write the instructions or delete the file"}}
	}
	if n := UTF16Len(string(b)); n > MaxInstructionsChars {
		return nil, []diag.Diagnostic{{Severity: diag.Error, File: path, Code: "oversized-instructions", Subject: subject,
			Message: fmt.Sprintf("instructions.md exceeds %d characters (it has %d)", MaxInstructionsChars, n),
			Hint:    "shorten the instructions"}}
	}
	return &File{Path: path, Content: b}, nil
}

// checkText rejects invalid UTF-8, naming the line and column of the first
// bad byte, because decoding would otherwise replace it silently.
func checkText(path string, b []byte, subject, what string) (diag.Diagnostic, bool) {
	if utf8.Valid(b) {
		return diag.Diagnostic{}, true
	}
	line, col := 1, 1
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return diag.Diagnostic{Severity: diag.Error, File: path, Line: line, Column: col, Code: "invalid-utf8-" + what, Subject: subject,
				Message: fmt.Sprintf("%s is not valid UTF-8 (byte 0x%02x)", filepath.Base(path), b[i]),
				Hint:    "save the file as UTF-8"}, false
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col += size // columns count bytes, as everywhere in diagnostics
		}
		i += size
	}
	return diag.Diagnostic{}, true
}

// UTF16Len counts UTF-16 code units (JavaScript's .length), the unit the
// text limits are defined in.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// unwrapPath drops the path from *fs.PathError, because diagnostics already
// name the file.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

package channel

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/facets-dev/facets/internal/envvar"
)

// Direction names one inbox of a channel; each direction has exactly one writer.
type Direction string

// The two directions of a channel. Their values are also the inbox directory
// names and the prefixes of the sequence counter files.
const (
	ToMain Direction = "to-main"
	ToSub  Direction = "to-sub"
)

// Valid reports whether d is one of the two directions.
func (d Direction) Valid() bool { return d == ToMain || d == ToSub }

// ParseDirection converts the wire name of a direction, rejecting anything else.
func ParseDirection(s string) (Direction, error) {
	d := Direction(s)
	if !d.Valid() {
		return "", fmt.Errorf("unknown direction %q (want %q or %q)", s, ToMain, ToSub)
	}
	return d, nil
}

// File names of the channel layout; both implementations use these names,
// so they cannot change without breaking the other side.
const (
	manifestFile   = "manifest.json"
	sessionName    = "session.json"
	activeTurnFile = "active-turn.json"
	interruptFile  = "interrupt.json"
	closeFile      = "close.json"
	closedFile     = "closed.json"
)

func sequenceFile(d Direction) string { return string(d) + "-sequence.json" }

// Size limits: talk payloads and a delegated task may be at most 1 MiB,
// which both implementations enforce; the manifest holds the task beside the
// profile snapshot, so it may be larger; control files are kept small
// because they are read on every wake.
const (
	MaxMessageBytes  = 1 << 20
	maxManifestBytes = 4 << 20
	maxControlBytes  = 64 << 10
)

// RuntimeRoot returns $XDG_RUNTIME_DIR/pi-facets-<uid>, falling back to the
// temp dir ($TMPDIR, else /tmp, as os.TempDir has it on Unix) when it is
// unset, as the TypeScript Facets does, so both agree on the root without
// configuration. Both variables are read through getenv, never from the
// process: the plan daemon runs plans with its caller's environment.
func RuntimeRoot(getenv func(string) string) string {
	base := getenv(envvar.XDGRuntimeDir)
	if base == "" {
		base = getenv(envvar.TmpDir)
	}
	if base == "" {
		base = "/tmp"
	}
	return filepath.Join(base, fmt.Sprintf("pi-facets-%d", os.Geteuid()))
}

// Safe maps an identifier to a single path component: each run of characters
// outside [A-Za-z0-9._-] becomes "-", leading and trailing "-" are trimmed,
// the result is cut to 96 bytes and an empty result becomes "unknown".
func Safe(s string) string {
	var b strings.Builder
	dash := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 96 {
		out = out[:96]
	}
	// "." and ".." would escape or alias the parent; UUIDs never produce
	// them, but arbitrary session ids could.
	if out == "" || out == "." || out == ".." {
		return "unknown"
	}
	return out
}

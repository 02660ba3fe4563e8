package herdr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// errNoJSON means herdr printed nothing that parses as a JSON object.
var errNoJSON = errors.New("herdr returned no JSON response")

// parseEnvelope finds herdr's response in stdout. herdr prints one compact
// line, but a wrapper or shell may add lines around it, so the lines are
// scanned from last to first and the first JSON object wins. The object's
// "result" member is returned when present, else the whole object.
func parseEnvelope(stdout []byte) (json.RawMessage, error) {
	lines := bytes.Split(stdout, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil || obj == nil {
			continue
		}
		if res, ok := obj["result"]; ok && isObject(res) {
			return res, nil
		}
		return json.RawMessage(line), nil
	}
	return nil, fmt.Errorf("%w: %q", errNoJSON, excerpt(stdout))
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// herdrError is the error member of herdr's error envelope.
type herdrError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// parseErrorEnvelope extracts {"error":{"code","message"}} from stderr,
// reporting false when stderr holds no such envelope (usage text, a Rust
// io::Error, nothing).
func parseErrorEnvelope(stderr []byte) (herdrError, bool) {
	lines := bytes.Split(stderr, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var env struct {
			Error *herdrError `json:"error"`
		}
		if err := json.Unmarshal(line, &env); err != nil || env.Error == nil || env.Error.Code == "" {
			continue
		}
		return *env.Error, true
	}
	return herdrError{}, false
}

// excerpt shortens herdr output for an error message, keeping it valid UTF-8.
func excerpt(b []byte) string {
	const max = 300
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Version is a Herdr release number, with the pre-release tag a build
// between releases carries.
type Version struct {
	Major, Minor, Patch int
	// Pre is the tag after "-" ("preview.7"), empty for a release. Herdr
	// names a build made after release BASE "BASE-preview.N" (its
	// build_info.rs), so a preview tag sorts after its release; any other
	// tag is read as the release itself.
	Pre string
}

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// preview reports whether v is a build after its release (BASE-preview.N).
func (v Version) preview() bool { return v.Pre == "preview" || strings.HasPrefix(v.Pre, "preview.") }

// Less reports whether v is an older build than w. Two previews of one
// release are not ordered: their numbers follow no rule Facets relies on.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	if v.Patch != w.Patch {
		return v.Patch < w.Patch
	}
	return !v.preview() && w.preview()
}

// MinVersion is the oldest Herdr Facets can launch Subs safely with. The
// commands exist since 0.7.5, but before 0.8.2 agent start does not retry
// agent_pane_busy while a new tab's shell starts, counts an agent blocked on
// a startup dialog as ready, and agent prompt has no agent_blocked guard, so
// a task could be typed into that dialog.
var MinVersion = Version{Major: 0, Minor: 8, Patch: 2}

// NewestModelled is the newest Herdr release whose command line Facets
// follows. A newer release is used as this one, with a warning.
var NewestModelled = Version{Major: 0, Minor: 9, Patch: 3}

// modelledFor is the release Facets follows for v: the newest modelled one
// of v's line (0.8.2 for 0.8, NewestModelled for 0.9), else NewestModelled.
// A v newer than that is used as it, with a warning, so a patch release
// Facets was never checked against is not passed over in silence.
func modelledFor(v Version) Version {
	if v.Major == 0 && v.Minor == 8 {
		return Version{Major: 0, Minor: 8, Patch: 2}
	}
	return NewestModelled
}

// SupportedVersions names the Herdr releases Facets drives, for messages.
const SupportedVersions = "Herdr 0.8.2 or 0.9.0 to 0.9.3"

// minVersionReason is said with every too-old error.
const minVersionReason = "older releases can count a Pi blocked on a startup dialog as ready and type the task into that dialog, and do not retry agent start while a new tab's shell starts"

// parseVersion reads "herdr 0.8.2" (as printed by herdr --version, which
// may add a commit in parentheses) or a bare "0.8.2"; a "+build" suffix is
// ignored and a "-tag" kept as Pre. A tag of other than letters, digits,
// dots and dashes, or longer than maxPreLen, is refused: it would end up
// in messages.
func parseVersion(s string) (Version, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Version{}, fmt.Errorf("empty version")
	}
	word := fields[0]
	if word == "herdr" {
		if len(fields) < 2 {
			return Version{}, fmt.Errorf("no version number in %q", excerpt([]byte(s)))
		}
		word = fields[1]
	}
	word = strings.TrimPrefix(word, "v")
	if i := strings.IndexByte(word, '+'); i >= 0 {
		word = word[:i]
	}
	var pre string
	if i := strings.IndexByte(word, '-'); i >= 0 {
		word, pre = word[:i], word[i+1:]
		if len(pre) > maxPreLen || strings.Trim(pre, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != "" {
			return Version{}, fmt.Errorf("malformed version %q", excerpt([]byte(s)))
		}
	}
	parts := strings.Split(word, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("malformed version %q", excerpt([]byte(s)))
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return Version{}, fmt.Errorf("malformed version %q", excerpt([]byte(s)))
		}
		nums[i] = n
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2], Pre: pre}, nil
}

// maxPreLen bounds a pre-release tag; Herdr's are short ("preview.7",
// "preview.2026-09-09-b9ce9686").
const maxPreLen = 64

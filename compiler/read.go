package compiler

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/safefile"
)

// ReadManifest reads a manifest written by facets compile, checking it
// against the #Manifest schema first, so a stale or hand-edited file is
// reported with its positions instead of launching a wrong snapshot.
func ReadManifest(schema *cue.Schema, path string) (*manifest.Manifest, error) {
	data, err := safefile.ReadFile(path, manifest.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return ParseManifest(schema, path, data)
}

// ParseManifest is ReadManifest for a manifest already read from path. A
// manifest that breaks #Manifest in several places is refused with every
// finding, so one edit fixes them all.
func ParseManifest(schema *cue.Schema, path string, data []byte) (*manifest.Manifest, error) {
	if res := schema.ValidateJSON(cue.Manifest, path, data); !res.OK() {
		lines := make([]string, 0, len(res.Findings))
		for _, f := range res.Findings {
			lines = append(lines, fmt.Sprintf("%s:%d:%d: %s", f.File, f.Line, f.Column, f.Message))
		}
		return nil, fmt.Errorf("read manifest %s", strings.Join(lines, "; "))
	}
	return decodeManifest(path, data)
}

func decodeManifest(path string, data []byte) (*manifest.Manifest, error) {
	var m manifest.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", path, err)
	}
	if m.Version != manifest.Version {
		return nil, fmt.Errorf("read manifest %s: version %d, want %d", path, m.Version, manifest.Version)
	}
	return &m, nil
}

// CheckedManifests remembers in Dir which manifests passed #Manifest, by
// the sha256 of their bytes and of the embedded schema, so a frozen
// manifest is checked once, not at every delegate or invoke: each is its
// own facets process, and checking 1,000 profiles costs about half a
// second (BenchmarkFrozenManifestLaunch). An empty Dir remembers nothing.
// Dir is the user's own cache: whoever can write there could as well
// write the manifest itself.
type CheckedManifests struct {
	Dir string
}

// UserCheckedManifests is the user's cache of checked manifests:
// $XDG_CACHE_HOME/facets/checked-manifests, else
// ~/.cache/facets/checked-manifests; nowhere (an empty Dir) without either
// as an absolute path.
func UserCheckedManifests(getenv func(string) string) CheckedManifests {
	base := getenv(envvar.XDGCacheHome)
	if !filepath.IsAbs(base) {
		base = ""
		if h := getenv(envvar.Home); filepath.IsAbs(h) {
			base = filepath.Join(h, ".cache")
		}
	}
	if base == "" {
		return CheckedManifests{}
	}
	return CheckedManifests{Dir: filepath.Join(base, "facets", "checked-manifests")}
}

// maxCheckedManifests bounds Dir: the oldest entries go beyond it.
const maxCheckedManifests = 64

// Load reads a frozen manifest as ReadManifest does, skipping the
// #Manifest check for bytes already checked under this schema.
func (c CheckedManifests) Load(path string) (*manifest.Manifest, error) {
	data, err := safefile.ReadFile(path, manifest.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	sum := sha256.Sum256([]byte(cue.Digest() + "\x00" + string(data)))
	entry := ""
	if c.Dir != "" {
		entry = filepath.Join(c.Dir, hex.EncodeToString(sum[:]))
		if fi, err := os.Lstat(entry); err == nil && fi.Mode().IsRegular() {
			return decodeManifest(path, data)
		}
	}
	schema, err := cue.Load()
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(schema, path, data)
	if err == nil && entry != "" {
		c.remember(entry) // best effort: without it the next launch checks again
	}
	return m, err
}

// remember records entry, dropping the oldest entries beyond the bound.
func (c CheckedManifests) remember(entry string) {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(entry, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	f.Close()
	des, err := os.ReadDir(c.Dir)
	if err != nil || len(des) <= maxCheckedManifests {
		return
	}
	type aged struct {
		name string
		mod  int64
	}
	var all []aged
	for _, de := range des {
		if fi, err := de.Info(); err == nil {
			all = append(all, aged{de.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.mod, b.mod) })
	for _, a := range all[:max(0, len(all)-maxCheckedManifests)] {
		os.Remove(filepath.Join(c.Dir, a.name))
	}
}

// LoadManifest reads a frozen manifest with a freshly loaded schema; see
// ReadManifest.
func LoadManifest(path string) (*manifest.Manifest, error) {
	schema, err := cue.Load()
	if err != nil {
		return nil, err
	}
	return ReadManifest(schema, path)
}

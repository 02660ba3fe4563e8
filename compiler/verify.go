package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/safefile"
)

// Diagnostic codes of a stale-snapshot check.
const (
	CodeSourceChanged   = "source-changed"
	CodeSourceRemoved   = "source-removed"
	CodeSourceAdded     = "source-added"
	CodeTrustChanged    = "trust-changed"
	CodeManifestVersion = "manifest-version"
	CodeCompileDiffers  = "compile-differs"
)

// VerifyFile checks whether the frozen manifest at path still matches the
// sources it was compiled from (see OpenSnapshot and compareSnapshot); no
// diagnostics means it is current. A manifest of another format version is
// reported as stale, not as an error, because recompiling fixes it; a
// missing or malformed manifest is an error. A manifest that lies in
// another project than the one it was compiled in (a copied or moved
// checkout) is one manifest-moved diagnostic (see movedSnapshot).
//
// opts supplies what the manifest does not record: the home directory, the
// role packs and bundled roles, and a trust override. A snapshot compiled
// with --trust or --no-trust is checked under the same flag.
func VerifyFile(schema *cue.Schema, path string, opts Options) ([]Diagnostic, error) {
	data, err := safefile.ReadFile(path, manifest.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var head struct {
		Version  *int   `json:"version"`
		Cwd      string `json:"cwd"`
		AgentDir string `json:"agentDir"`
	}
	if json.Unmarshal(data, &head) == nil && head.Version != nil && *head.Version != manifest.Version {
		return []Diagnostic{{Severity: Error, Code: CodeManifestVersion, File: path,
			Message: fmt.Sprintf("manifest format version %d differs from this facets (version %d)", *head.Version, manifest.Version),
			Hint:    "recompile it with facets compile --out"}}, nil
	}
	// A copied checkout's snapshot would be compared with the original's
	// files; that it was moved is the one thing to say.
	if filepath.IsAbs(head.Cwd) {
		if d := movedSnapshot(path, head.Cwd, head.AgentDir); d != nil {
			return []Diagnostic{*d}, nil
		}
	}
	_, ds, err := OpenSnapshot(schema, path, data, opts)
	return ds, err
}

// OpenSnapshot decodes the frozen manifest read from path and checks it
// against its sources: it compiles them again in the manifest's own working
// directory and agent dir (compileLike) and reports the differences
// (compareSnapshot). A snapshot that is byte for byte
// what a fresh compile writes is current and, being the compiler's own
// output, valid by construction, so it is only decoded: evaluating
// #Manifest costs several times the compile itself on a large catalog,
// and a Main pays it at every start. Any other snapshot is checked against
// #Manifest (ParseManifest) before it is compared.
func OpenSnapshot(schema *cue.Schema, path string, data []byte, opts Options) (*manifest.Manifest, []Diagnostic, error) {
	var m manifest.Manifest
	if json.Unmarshal(data, &m) != nil || m.Version != manifest.Version || !filepath.IsAbs(m.Cwd) || !filepath.IsAbs(m.AgentDir) {
		frozen, err := ParseManifest(schema, path, data) // says where and why
		if err != nil {
			return nil, nil, err
		}
		m = *frozen
	}
	fresh, err := compileLike(schema, &m, path, opts)
	if err != nil {
		return nil, nil, err
	}
	if b, err := fresh.Encode(); err == nil && bytes.Equal(b, data) {
		return &m, nil, nil
	}
	frozen, err := ParseManifest(schema, path, data)
	if err != nil {
		return nil, nil, err
	}
	return frozen, compareSnapshot(frozen, fresh, path), nil
}

// compileLike compiles the sources again as the frozen manifest was: in
// its working directory and agent dir, all profiles, and under its trust
// flag when it was compiled with one.
func compileLike(schema *cue.Schema, frozen *manifest.Manifest, path string, opts Options) (*manifest.Manifest, error) {
	opts.Env.Cwd, opts.Env.AgentDir = frozen.Cwd, frozen.AgentDir
	opts.Names = nil
	opts.NoDigests = false
	if opts.TrustFlag == nil && frozen.Trust.Reason == "flag" {
		t := frozen.Trust.Trusted
		opts.TrustFlag = &t
	}
	fresh, _, err := Compile(schema, opts)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", path, err)
	}
	return fresh, nil
}

// compareSnapshot reports, one error each, every source whose digest
// changed, every source that is gone or no longer read, every file the
// fresh compile read that the snapshot did not, and a different trust
// decision. When no source changed but the fresh compile still differs,
// facets or its schema changed since the snapshot, which is one more
// diagnostic on the manifest itself (at path).
func compareSnapshot(frozen, fresh *manifest.Manifest, path string) []Diagnostic {
	var ds []Diagnostic
	if fresh.Trust.Trusted != frozen.Trust.Trusted {
		file := filepath.Join(frozen.AgentDir, "trust.json")
		switch {
		case fresh.Trust.Reason == "settings":
			file = fresh.Trust.Path
		case frozen.Trust.Reason == "settings":
			file = frozen.Trust.Path
		}
		ds = append(ds, Diagnostic{Severity: Error, Code: CodeTrustChanged, File: file,
			Message: fmt.Sprintf("project trust changed: the snapshot was compiled %s (%s), the sources are now %s (%s)",
				trustWord(frozen.Trust.Trusted), frozen.Trust.Reason, trustWord(fresh.Trust.Trusted), fresh.Trust.Reason),
			Hint: "recompile the snapshot, or restore the trust setting"})
	}
	now := map[string]string{}
	for _, s := range fresh.Sources {
		now[s.Path] = s.SHA256
	}
	then := map[string]string{}
	for _, s := range frozen.Sources {
		then[s.Path] = s.SHA256
		d, ok := now[s.Path]
		switch {
		case ok && d != s.SHA256:
			ds = append(ds, Diagnostic{Severity: Error, Code: CodeSourceChanged, File: s.Path,
				Message: fmt.Sprintf("changed since the snapshot (sha256 %s, now %s)", s.SHA256[:12], d[:12]),
				Hint:    "recompile the snapshot, or restore the file"})
		case !ok:
			msg := "removed since the snapshot"
			if _, err := os.Stat(s.Path); err == nil || !errors.Is(err, fs.ErrNotExist) {
				msg = "no longer read by a fresh compile (unreadable, or no longer in a loaded scope)"
			}
			ds = append(ds, Diagnostic{Severity: Error, Code: CodeSourceRemoved, File: s.Path, Message: msg,
				Hint: "recompile the snapshot, or restore the file"})
		}
	}
	for _, s := range fresh.Sources {
		if _, ok := then[s.Path]; !ok {
			ds = append(ds, Diagnostic{Severity: Error, Code: CodeSourceAdded, File: s.Path,
				Message: "added since the snapshot: a fresh compile reads it",
				Hint:    "recompile the snapshot, or remove the file"})
		}
	}
	if len(ds) == 0 && !sameCatalog(frozen, fresh) {
		ds = append(ds, Diagnostic{Severity: Error, Code: CodeCompileDiffers, File: path,
			Message: "no source changed, but a fresh compile gives a different catalog: facets or its schema changed since the snapshot",
			Hint:    "recompile the snapshot with this facets"})
	}
	return SortDiagnostics(ds)
}

// sameCatalog compares what a launch uses. Profiles are compared for the
// snapshot's names only, because an exact-name compile holds a subset
// (an added profile shows up as an added source anyway).
func sameCatalog(frozen, fresh *manifest.Manifest) bool {
	names := map[string]bool{}
	for _, p := range frozen.Profiles {
		names[p.Name] = true
	}
	ps := []manifest.Profile{}
	for _, p := range fresh.Profiles {
		if names[p.Name] {
			ps = append(ps, p)
		}
	}
	// Compare encodings: a decoded snapshot has nil where a fresh compile
	// has empty slices, which the manifest does not tell apart.
	return sameJSON(frozen.Profiles, ps) && sameJSON(frozen.Roles, fresh.Roles) && sameJSON(frozen.Main, fresh.Main)
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func trustWord(t bool) string {
	if t {
		return "trusted"
	}
	return "untrusted"
}

package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/facets-dev/facets/internal/envvar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

func sampleManifest() *manifest.Manifest {
	return &manifest.Manifest{
		Version:  manifest.Version,
		Cwd:      "/work",
		AgentDir: "/home/u/.pi/agent",
		Trust:    manifest.Trust{Trusted: true, Reason: "flag"},
		Profiles: []manifest.Profile{{
			Name: "reviewer", Scope: "global", Form: "directory", SourcePath: "/home/u/.pi/agent/facets/profiles/reviewer/config.json",
			SourceSHA256: manifest.Digest([]byte("{}")), AgentInvokable: true,
			Launch: manifest.Launch{Tools: []string{"read"}, Skills: []string{}, Extensions: []string{}, SessionPersistence: "ephemeral", Invocation: "both"},
		}},
		Roles:       []manifest.Role{},
		Main:        []manifest.MainSection{},
		Sources:     []manifest.Source{{Path: "/home/u/.pi/agent/facets/profiles/reviewer/config.json", SHA256: manifest.Digest([]byte("{}"))}},
		Diagnostics: []diag.Diagnostic{},
	}
}

func write(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadManifestRoundTrip: what Encode writes, LoadManifest reads back
// unchanged, and Encode is byte-for-byte stable.
func TestReadManifestRoundTrip(t *testing.T) {
	m := sampleManifest()
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadManifest(write(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	again, _ := got.Encode()
	if string(again) != string(b) {
		t.Errorf("encoding not stable:\n%s\n---\n%s", b, again)
	}
}

// TestReadManifestRejects: a manifest that breaks #Manifest is refused with
// its file and position, before anything is launched from it.
// TestReadManifestRejects: every way a manifest can break #Manifest,
// nested ones included, is an error naming the file, the position and the
// field (a nested missing or unknown key once panicked: CUE's error had no
// finding).
func TestReadManifestRejects(t *testing.T) {
	b, err := sampleManifest().Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"wrong version", `"version": 1`, `"version": 2`, "version"},
		{"bad trust", `"reason": "flag"`, `"reason": "hope"`, "trust"},
		{"relative cwd", `"cwd": "/work"`, `"cwd": "work"`, "cwd"},
		{"nested key misspelt", `"reason": "flag"`, `"reasons": "flag"`, `unknown field "reasons" in trust`},
		{"entry key missing", `"agentInvokable": true,`, ``, `missing required field "agentInvokable" in profiles.0`},
		{"nested key unknown", `"invocation": "both"`, `"invocation": "both", "sandbox": true`, `unknown field "sandbox" in profiles.0.launch`},
		{"empty trust", `"trusted": true,`, ``, `missing required field "trusted" in trust`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(string(b), tc.old, tc.new, 1)
			if doc == string(b) {
				t.Fatalf("fixture lost its point: no %s in the sample", tc.old)
			}
			path := write(t, []byte(doc))
			_, err := LoadManifest(path)
			if err == nil || !strings.Contains(err.Error(), "read manifest "+path+":") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a positioned error naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}

// TestReadManifestAllFindings: a manifest broken in two places names both,
// so one edit fixes the file instead of one rerun per finding.
func TestReadManifestAllFindings(t *testing.T) {
	b, err := sampleManifest().Encode()
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(strings.Replace(string(b), `"reason": "flag"`, `"reason": "hope"`, 1), `"cwd": "/work"`, `"cwd": "work"`, 1)
	_, err = LoadManifest(write(t, []byte(doc)))
	if err == nil || !strings.Contains(err.Error(), "trust") || !strings.Contains(err.Error(), "cwd") {
		t.Errorf("err = %v, want both the trust and the cwd finding", err)
	}
}

// TestReadManifestHostile: a frozen manifest replaced by a FIFO, /dev/zero
// or an oversized file is refused with its path, without blocking.
func TestReadManifestHostile(t *testing.T) {
	schema := loadSchema(t)
	safefiletest.Refused(t, manifest.MaxBytes, "manifest.json", func(path string) error {
		_, err := ReadManifest(schema, path)
		return err
	})
}

// TestCheckedManifestsCheckOnce: a frozen manifest is checked against
// #Manifest by its first launch only; later launches of the same bytes
// under the same schema decode it straight away. A manifest that fails
// the check is never remembered, and the memory is bounded.
func TestCheckedManifestsCheckOnce(t *testing.T) {
	c := CheckedManifests{Dir: filepath.Join(t.TempDir(), "checked")}
	b, err := sampleManifest().Encode()
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, b)
	for i := range 2 {
		if _, err := c.Load(path); err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	if ents, _ := os.ReadDir(c.Dir); len(ents) != 1 {
		t.Fatalf("%d entries after two loads of one manifest, want 1", len(ents))
	}
	// Decodable but against #Manifest (a profile without tools): refused
	// and not remembered, then accepted once its check is on record,
	// which shows the second launch does not evaluate #Manifest.
	bad := regexp.MustCompile(`"tools": \[\s*"read"\s*\]`).ReplaceAllString(string(b), `"tools": []`)
	if bad == string(b) {
		t.Fatalf("no tools list to empty in %s", b)
	}
	badPath := write(t, []byte(bad))
	if _, err := c.Load(badPath); err == nil {
		t.Fatal("a manifest breaking #Manifest loaded")
	}
	if ents, _ := os.ReadDir(c.Dir); len(ents) != 1 {
		t.Fatalf("a refused manifest was remembered: %d entries", len(ents))
	}
	sum := sha256.Sum256([]byte(cue.Digest() + "\x00" + bad))
	os.WriteFile(filepath.Join(c.Dir, hex.EncodeToString(sum[:])), nil, 0o600)
	if _, err := c.Load(badPath); err != nil {
		t.Fatalf("a remembered manifest was checked again: %v", err)
	}
	if _, err := (CheckedManifests{}).Load(badPath); err == nil {
		t.Fatal("without a Dir the check was skipped")
	}
	for i := range maxCheckedManifests + 6 {
		m := sampleManifest()
		m.Cwd = fmt.Sprintf("/work/%d", i)
		b, _ := m.Encode()
		if _, err := c.Load(write(t, b)); err != nil {
			t.Fatal(err)
		}
	}
	if ents, _ := os.ReadDir(c.Dir); len(ents) > maxCheckedManifests {
		t.Errorf("%d entries, want at most %d", len(ents), maxCheckedManifests)
	}
}

func TestUserCheckedManifests(t *testing.T) {
	for _, tc := range []struct {
		name, cache, home, want string
	}{
		{"XDG_CACHE_HOME", "/c", "/h", "/c/facets/checked-manifests"},
		{"home", "", "/h", "/h/.cache/facets/checked-manifests"},
		{"a relative XDG_CACHE_HOME is ignored", "c", "/h", "/h/.cache/facets/checked-manifests"},
		{"nowhere", "c", "h", ""},
	} {
		env := map[string]string{envvar.XDGCacheHome: tc.cache, envvar.Home: tc.home}
		if got := UserCheckedManifests(func(k string) string { return env[k] }).Dir; got != tc.want {
			t.Errorf("%s: Dir = %q, want %q", tc.name, got, tc.want)
		}
	}
}

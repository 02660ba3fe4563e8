package compiler

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/profiles"
)

// verifyTree writes a one-profile agent dir and compiles it.
func verifyTree(t testing.TB) (*cue.Schema, *manifest.Manifest, Options) {
	t.Helper()
	root := t.TempDir()
	agent := filepath.Join(root, "agent")
	p := filepath.Join(agent, "facets", "profiles", "r", "config.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"version":1,"name":"r","tools":["read"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := loadSchema(t)
	opts := Options{Env: profiles.Env{AgentDir: agent, Cwd: root, Home: filepath.Join(root, "home")}}
	m, _, err := Compile(schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	return schema, m, opts
}

func TestVerify(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m *manifest.Manifest)
		want []string // diagnostic codes
	}{
		{"current", func(*manifest.Manifest) {}, nil},
		// The sources are the same but the catalog is not: what a newer
		// facets or schema would produce.
		{"compile differs", func(m *manifest.Manifest) { m.Profiles[0].Launch.Tools = []string{"bash"} }, []string{CodeCompileDiffers}},
		{"profile missing from snapshot", func(m *manifest.Manifest) { m.Profiles[0].Name = "other" }, []string{CodeCompileDiffers}},
		{"source digest", func(m *manifest.Manifest) { m.Sources[0].SHA256 = manifest.Digest([]byte("x")) }, []string{CodeSourceChanged}},
		{"source gone", func(m *manifest.Manifest) {
			m.Sources = append(m.Sources, manifest.Source{Path: "/no/such/file", SHA256: manifest.Digest(nil)})
		}, []string{CodeSourceRemoved}},
		{"source new", func(m *manifest.Manifest) { m.Sources = []manifest.Source{} }, []string{CodeSourceAdded}},
		{"trust", func(m *manifest.Manifest) {
			m.Trust = manifest.Trust{Trusted: true, Reason: "settings", Path: "/x/settings.json"}
		}, []string{CodeTrustChanged}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema, m, opts := verifyTree(t)
			tc.edit(m)
			data, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "m.json")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			// VerifyFile takes the scopes from the manifest, not from opts.
			opts.Env.Cwd, opts.Env.AgentDir = "/", "/nonexistent"
			ds, err := VerifyFile(schema, path, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ds {
				got = append(got, d.Code)
				if d.Severity != Error || d.File == "" {
					t.Errorf("diagnostic %+v: want an error naming a file", d)
				}
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("codes %v, want %v", got, tc.want)
			}
		})
	}
}

func TestVerifyFileVersion(t *testing.T) {
	schema, _, opts := verifyTree(t)
	p := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(p, []byte(`{"version": 7}`), 0o644)
	ds, err := VerifyFile(schema, p, opts)
	if err != nil || len(ds) != 1 || ds[0].Code != CodeManifestVersion {
		t.Fatalf("VerifyFile(version 7) = %v, %v; want one %s", ds, err, CodeManifestVersion)
	}
	os.WriteFile(p, []byte(`{"version": 1}`), 0o644)
	if _, err := VerifyFile(schema, p, opts); err == nil {
		t.Error("VerifyFile(malformed manifest): no error")
	}
}

// TestOpenSnapshot: a snapshot byte for byte what compile writes is
// current and decoded as it is; one that differs only in layout is checked
// against #Manifest and is still current; one that breaks #Manifest is
// refused with its position; an edited source is reported. That the first
// compiles no CUE is TestCurrentSnapshotNeedsNoCUE in ./cue, where the
// schema's state can be seen.
func TestOpenSnapshot(t *testing.T) {
	_, m, opts := verifyTree(t)
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	open := func(data []byte) (*manifest.Manifest, []Diagnostic, error) {
		return OpenSnapshot(loadSchema(t), "m.json", data, opts)
	}

	got, ds, err := open(data)
	if err != nil || len(ds) != 0 {
		t.Fatalf("identical snapshot: %v, %v; want current", ds, err)
	}
	if b, _ := got.Encode(); !bytes.Equal(b, data) {
		t.Errorf("identical snapshot decoded to\n%s\nwant\n%s", b, data)
	}

	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	if _, ds, err = open(compact.Bytes()); err != nil || len(ds) != 0 {
		t.Errorf("compacted snapshot: %v, %v; want current", ds, err)
	}

	bad := bytes.Replace(data, []byte(`"sessionPersistence": "ephemeral"`), []byte(`"sessionPersistence": "forever"`), 1)
	if bytes.Equal(bad, data) {
		t.Fatal("fixture lost its point: no sessionPersistence to break")
	}
	if _, _, err := open(bad); err == nil || !strings.Contains(err.Error(), "m.json:") {
		t.Errorf("invalid snapshot: err %v, want a positioned #Manifest error", err)
	}

	if err := os.WriteFile(m.Profiles[0].SourcePath, []byte(`{"version":1,"name":"r","tools":["bash"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ds, err := open(data); err != nil || len(ds) != 1 || ds[0].Code != CodeSourceChanged {
		t.Errorf("edited source: %v, %v; want one %s", ds, err, CodeSourceChanged)
	}
}

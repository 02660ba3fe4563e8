package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/manifest"
	"github.com/facets-dev/facets/profiles"
)

// verifyTree writes a one-profile agent dir and compiles it.
func verifyTree(t *testing.T) (*cue.Schema, *manifest.Manifest, Options) {
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
		{"source new", func(m *manifest.Manifest) { m.Sources = nil }, []string{CodeSourceAdded}},
		{"trust", func(m *manifest.Manifest) {
			m.Trust = manifest.Trust{Trusted: true, Reason: "settings", Path: "/x/settings.json"}
		}, []string{CodeTrustChanged}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema, m, opts := verifyTree(t)
			tc.edit(m)
			// Verify takes the scopes from the manifest, not from opts.
			opts.Env.Cwd, opts.Env.AgentDir = "/", "/nonexistent"
			ds, err := Verify(schema, m, "m.json", opts)
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

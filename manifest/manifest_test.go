package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/diag"
)

func sample() *Manifest {
	return &Manifest{
		Version:  ManifestVersion,
		Cwd:      "/work",
		AgentDir: "/home/u/.pi/agent",
		Trust:    Trust{Trusted: true, Reason: "flag"},
		Profiles: []Profile{{
			Name: "reviewer", Scope: "global", Form: "directory", SourcePath: "/home/u/.pi/agent/facets/profiles/reviewer/config.json",
			SourceSHA256: Digest([]byte("{}")), AgentInvokable: true,
			Launch: Launch{Tools: []string{"read"}, Skills: []string{}, Extensions: []string{}, SessionPersistence: "ephemeral", Invocation: "both"},
		}},
		Roles:       []Role{},
		Main:        []MainSection{},
		Sources:     []Source{{Path: "/home/u/.pi/agent/facets/profiles/reviewer/config.json", SHA256: Digest([]byte("{}"))}},
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
	m := sample()
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
func TestReadManifestRejects(t *testing.T) {
	b, err := sample().Encode()
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(string) string{
		"wrong version": func(s string) string { return strings.Replace(s, `"version": 1`, `"version": 2`, 1) },
		"bad trust":     func(s string) string { return strings.Replace(s, `"reason": "flag"`, `"reason": "hope"`, 1) },
		"relative cwd":  func(s string) string { return strings.Replace(s, `"cwd": "/work"`, `"cwd": "work"`, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			path := write(t, []byte(edit(string(b))))
			_, err := LoadManifest(path)
			if err == nil || !strings.Contains(err.Error(), "read manifest "+path+":") {
				t.Errorf("err = %v, want a positioned error naming %s", err, path)
			}
		})
	}
}

func TestUnknownProfileMessage(t *testing.T) {
	if got, want := UnknownProfileMessage("x", nil), "Unknown Facets profile 'x'. Available: (none)."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ps := []Profile{{Name: "a"}, {Name: "b"}}
	if got, want := UnknownProfileMessage("x", ps), "Unknown Facets profile 'x'. Available: a, b."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

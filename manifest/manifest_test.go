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
// TestReadManifestRejects: every way a manifest can break #Manifest,
// nested ones included, is an error naming the file, the position and the
// field (a nested missing or unknown key once panicked: CUE's error had no
// finding).
func TestReadManifestRejects(t *testing.T) {
	b, err := sample().Encode()
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

func TestUnknownProfileMessage(t *testing.T) {
	if got, want := UnknownProfileMessage("x", nil), "Unknown Facets profile 'x'. Available: (none)."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ps := []Profile{{Name: "a"}, {Name: "b"}}
	if got, want := UnknownProfileMessage("x", ps), "Unknown Facets profile 'x'. Available: a, b."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

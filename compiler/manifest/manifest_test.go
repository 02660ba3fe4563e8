package manifest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/diag"
)

func sample() *Manifest {
	return &Manifest{
		Version:  Version,
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

// TestEncodeStable: Encode is byte-for-byte stable across a decode.
func TestEncodeStable(t *testing.T) {
	b, err := sample().Encode()
	if err != nil {
		t.Fatal(err)
	}
	var back Manifest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again, err := back.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(b) {
		t.Errorf("encoding not stable:\n%s\n---\n%s", b, again)
	}
	if !strings.HasSuffix(string(b), "}\n") || strings.Contains(string(b), `\u003c`) {
		t.Errorf("want a trailing newline and no HTML escaping:\n%s", b)
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

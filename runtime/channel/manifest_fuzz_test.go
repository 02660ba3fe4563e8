package channel

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeManifest feeds a channel's manifest.json, which a Sub reads
// from a directory other processes can write, to decodeManifest. It must
// never panic; a refusal says it is an invalid channel manifest (Open adds
// the directory); what it accepts is version 1 with a run id, a 64-character
// token and a profile snapshot a Sub can apply, and survives a write/read
// round trip unchanged.
func FuzzDecodeManifest(f *testing.F) {
	m := testManifest("3f1c2a9e-0000-4000-8000-000000000001")
	m.Version, m.Token, m.CreatedAt = 1, strings.Repeat("ab", 32), 1700000000000
	good, err := encodeJSON(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"createdAt": 1700000000000`), []byte(`"createdAt": 1.5`), 1))
	f.Add(bytes.Replace(good, []byte(`"version": 1,`), []byte(`"version": 1, "origin": "manual",`), 1))
	f.Add(bytes.Replace(good, []byte(`"tools":["read","grep"]`), []byte(`"tools":[]`), 1))
	f.Add(bytes.Replace(good, []byte(`"resolvedSkills":[]`), []byte(`"resolvedSkills":null`), 1))
	f.Add(bytes.Replace(good, []byte(`"version": 1,`), []byte(`"version": 1.0e0,`), 1))
	f.Add(append(good, "{}"...))
	f.Add([]byte(`{"version":1,"profile":{}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeManifest(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid channel manifest: ") {
				t.Fatalf("refusal does not say what it refuses: %v", err)
			}
			return
		}
		if got.Version != 1 || got.RunID == "" || len(got.Token) != 64 || checkProfile(got.Profile) != nil {
			t.Fatalf("accepted an invalid manifest: %+v", got)
		}
		again, err := encodeJSON(got)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeManifest(again)
		if err != nil {
			t.Fatalf("re-encoded manifest refused: %v\n%s", err, again)
		}
		// The profile snapshot is kept as raw bytes; compare it as JSON.
		if !bytes.Equal(compact(t, back.Profile), compact(t, got.Profile)) {
			t.Fatalf("round trip changed the profile: %s -> %s", got.Profile, back.Profile)
		}
		back.Profile, got.Profile = nil, nil
		if diff := cmp.Diff(got, back); diff != "" {
			t.Fatalf("round trip changed the manifest (-first +second):\n%s", diff)
		}
	})
}

func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("profile snapshot is not JSON: %v", err)
	}
	return b.Bytes()
}

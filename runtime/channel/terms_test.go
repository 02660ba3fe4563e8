package channel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrongTypesInJSONTerms: a wrong-typed field of a control file or
// channel manifest is refused in the file's terms (the key and the JSON
// kinds), never Go's ("cannot unmarshal ... into Go struct field
// closureRecord.createdAt of type int64").
func TestWrongTypesInJSONTerms(t *testing.T) {
	c := newTestChannel(t)
	m := c.Manifest()
	for _, tc := range []struct{ createdAt, want string }{
		{`"soon"`, `"createdAt" must be an integer, not string`},
		{`1.5`, `"createdAt" must be an integer, not number 1.5`},
		{`true`, `"createdAt" must be an integer, not bool`},
	} {
		doc := `{"version":1,"runId":"` + m.RunID + `","token":"` + m.Token + `","createdAt":` + tc.createdAt + `,"reason":"r"}`
		if err := os.WriteFile(filepath.Join(c.Dir(), closeFile), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := c.CloseRequest()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Go struct") {
			t.Errorf("createdAt %s: err = %v, want %q", tc.createdAt, err, tc.want)
		}
	}
	doc := manifestDoc(t, c)
	doc["createdAt"] = 1.5
	b, _ := json.Marshal(doc)
	if _, err := decodeManifest(b); err == nil || !strings.Contains(err.Error(), `"createdAt" must be an integer, not number 1.5`) {
		t.Errorf("manifest: err = %v", err)
	}
}

// TestManifestTokenMustBeHex: the token is 64 lowercase hex characters;
// 64 other characters are no token.
func TestManifestTokenMustBeHex(t *testing.T) {
	doc := manifestDoc(t, newTestChannel(t))
	for _, tok := range []string{strings.Repeat("z", 64), strings.Repeat("A", 64), strings.Repeat("a", 63) + " ", strings.Repeat("é", 32)} {
		doc["token"] = tok
		b, _ := json.Marshal(doc)
		if _, err := decodeManifest(b); err == nil || !strings.Contains(err.Error(), "hex") {
			t.Errorf("token %q: err = %v, want a hex refusal", tok, err)
		}
	}
	doc["token"] = strings.Repeat("0a", 32)
	b, _ := json.Marshal(doc)
	if _, err := decodeManifest(b); err != nil {
		t.Errorf("a hex token is refused: %v", err)
	}
}

// manifestDoc is the manifest.json of c as a JSON object.
func manifestDoc(t *testing.T, c *Channel) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir(), manifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

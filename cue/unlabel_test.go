package cue

import "testing"

// TestUnknownKeyWhateverItsCharacters: a key CUE cannot turn into a label
// is still an unknown field, so --strict never passes it.
func TestUnknownKeyWhateverItsCharacters(t *testing.T) {
	s := mustLoad(t)
	for _, key := range []string{`a\nb.json`, `\u0000`, `x\ty`, `\\(x)`, `\"`, `\u001b[31m`, `#x`, `_x`, `tools\n`} {
		t.Run(key, func(t *testing.T) {
			doc := `{"version":1,"name":"a","tools":["read"],"` + key + `":1}`
			res := s.ValidateJSON(Profile, "p.json", []byte(doc))
			if res.OK() {
				t.Fatalf("%s validated", doc)
			}
			var unknown bool
			for _, f := range res.Findings {
				if f.Code == CodeUnknownField {
					unknown = true
					if f.Line != 1 || f.Column < 40 {
						t.Errorf("finding at %d:%d, want the key's position", f.Line, f.Column)
					}
				}
			}
			if !unknown {
				t.Errorf("no unknown-field finding for %q: %+v", key, res.Findings)
			}
		})
	}
}

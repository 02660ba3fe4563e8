package channel

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeMainLease: a Main presence file, which any process of the user
// can write, never panics the decoder; what it accepts round-trips and is
// never both ephemeral and tied to a session file.
func FuzzDecodeMainLease(f *testing.F) {
	for _, s := range []string{`{"ephemeral":true}`, `{"sessionFile":"/s/x.jsonl"}`, `{}`, `{"ephemeral":true,"sessionFile":"x"}`,
		`{"ephemeral":1}`, `{"x":1}`, `{} {}`, ``, `null`, `{"sessionFile":"a\u0000b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := DecodeMainLease(data)
		if err != nil {
			return
		}
		if l.Ephemeral && l.SessionFile != "" {
			t.Fatalf("accepted %q as both ephemeral and with a session file", data)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeMainLease(b)
		if err != nil || again != l {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", data, again, err, l)
		}
	})
}

package channel

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var fuzzIdentity = identity{runID: "3f1c2a9e-0000-4000-8000-000000000001", token: strings.Repeat("ab", 32)}

// FuzzDecodeMessage feeds arbitrary bytes to the inbox payload decoder: it
// must never panic, and whatever it accepts must survive a write/read round
// trip unchanged and carry the channel identity.
func FuzzDecodeMessage(f *testing.F) {
	good, _ := encodeJSON(wireMessage{Version: 1, ID: "m-1", Sequence: 7, RunID: fuzzIdentity.runID, Token: fuzzIdentity.token, CreatedAt: 1700000000000, Message: "hi <&> \u2028 \x01"})
	f.Add(good)
	f.Add([]byte(`{"version":1,"id":"x","sequence":9007199254740991,"runId":"` + fuzzIdentity.runID + `","token":"` + fuzzIdentity.token + `","createdAt":-1.5e3,"message":""}`))
	f.Add([]byte(`{"version":1.0,"id":"x","sequence":1e0,"runId":"` + fuzzIdentity.runID + `","token":"` + fuzzIdentity.token + `","createdAt":0,"message":"\ud800"}`))
	f.Add([]byte(`{"version":1,"id":"x","sequence":0}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"version":1} {}`))
	f.Add([]byte{0xff, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMessage(data, ToMain, fuzzIdentity)
		if err != nil {
			return
		}
		if m.RunID != fuzzIdentity.runID || m.ID == "" || m.Sequence < 1 || m.Sequence > maxSafeInteger || m.Direction != ToMain {
			t.Fatalf("accepted an invalid message: %+v", m)
		}
		again, err := encodeJSON(wireMessage{Version: 1, ID: m.ID, Sequence: m.Sequence, RunID: m.RunID, Token: fuzzIdentity.token, CreatedAt: m.CreatedAt, Message: m.Text})
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeMessage(again, ToMain, fuzzIdentity)
		if err != nil {
			t.Fatalf("re-encoded message rejected: %v\n%s", err, again)
		}
		if diff := cmp.Diff(m, back); diff != "" {
			t.Fatalf("round trip changed the message (-first +second):\n%s", diff)
		}
		// The delivered text must carry a header that parses back to it.
		r, body, err := ParseDeliveryHeader(FormatDelivery(m))
		if err != nil || r != m.Receipt() || body != m.Text {
			t.Fatalf("delivery header round trip: %+v %q %v", r, body, err)
		}
	})
}

// FuzzParseDeliveryHeader checks that any accepted header re-renders to
// text that parses to the same receipt and content.
func FuzzParseDeliveryHeader(f *testing.F) {
	f.Add(FormatDeliveryHeader(Receipt{Direction: ToSub, RunID: "r", MessageID: "m"}) + "body")
	f.Add(`[Facets delivery v1] {"direction":"to-main","runId":"a\u2028","messageId":"\"x"}` + "\n\nz")
	f.Add("[Facets delivery v1] {}\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		r, body, err := ParseDeliveryHeader(text)
		if err != nil {
			return
		}
		r2, body2, err := ParseDeliveryHeader(FormatDeliveryHeader(r) + body)
		if err != nil || r2 != r || body2 != body {
			t.Fatalf("re-rendered header: %+v %q %v (from %+v %q)", r2, body2, err, r, body)
		}
	})
}

// FuzzDecodeMessageFast checks the fast decoder against decodeMessage: it
// may leave any input to decodeMessage, but what it accepts decodeMessage
// accepts too, as the same message.
func FuzzDecodeMessageFast(f *testing.F) {
	for _, text := range fastTexts {
		good, _ := encodeJSON(wireMessage{Version: 1, ID: "m-1", Sequence: 7, RunID: fuzzIdentity.runID, Token: fuzzIdentity.token, CreatedAt: 1700000000000, Message: text})
		f.Add(good)
	}
	id := `"runId":"` + fuzzIdentity.runID + `","token":"` + fuzzIdentity.token + `"`
	f.Add([]byte(`{"version":1,"id":"x","sequence":9007199254740991,` + id + `,"createdAt":-9007199254740991,"message":"","extra":"\u0041","n":12}`))
	f.Add([]byte(`{"version":1,"id":"x","sequence":9007199254740992,` + id + `,"createdAt":0,"message":""}`))
	f.Add([]byte(`{"version":1,"id":"x","sequence":1,` + id + `,"createdAt":-0,"message":"a","message":"b"}`))
	f.Add([]byte(`{"version":1,"id":"x","sequence":01,` + id + `,"createdAt":0,"message":"\ud800\x"}`))
	f.Add([]byte(`{"version":1,"id":"x","sequence":1,` + id + `,"createdAt":0,"message":"a"}}`))
	f.Add([]byte(` {"vers\u0069on":1,"id":"\u00e9","sequence":1,` + id + `,"createdAt":0,"message":"\xff"} `))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeMessageFast(data, ToMain, fuzzIdentity)
		if !ok {
			return
		}
		slow, err := decodeMessage(data, ToMain, fuzzIdentity)
		if err != nil {
			t.Fatalf("fast decoder accepted what decodeMessage refuses (%v):\n%q", err, data)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("fast decoder differs (-decodeMessage +fast):\n%s\n%q", diff, data)
		}
	})
}

// fastTexts are message texts whose files, as facets writes them, the fast
// decoder must take itself.
var fastTexts = []string{"", "hi", "two\nlines\tand \"quotes\" \\ <&>", "\u2028\u2029 é 日本 🎉", "\x01\x1f\x7f", "\xff invalid", strings.Repeat("x", 70000)}

func TestDecodeMessageFastTakesWrittenMessages(t *testing.T) {
	for _, text := range fastTexts {
		data, err := encodeJSON(wireMessage{Version: 1, ID: NewID(), Sequence: 42, RunID: fuzzIdentity.runID, Token: fuzzIdentity.token, CreatedAt: 1764765000000, Message: text})
		if err != nil {
			t.Fatal(err)
		}
		fast, ok := decodeMessageFast(data, ToSub, fuzzIdentity)
		if !ok {
			t.Errorf("fast decoder left a written message to decodeMessage:\n%s", data)
			continue
		}
		slow, err := decodeMessage(data, ToSub, fuzzIdentity)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Errorf("fast decoder differs (-decodeMessage +fast):\n%s", diff)
		}
	}
}

func TestEncodeMessageMatchesEncodeJSON(t *testing.T) {
	for _, text := range append(fastTexts, "\b\f\r\x00\x7f\u2028x\u2029", "\xed\xa0\x80 surrogate", "<a href=\"x\">&amp;</a>") {
		w := wireMessage{Version: 1, ID: NewID(), Sequence: maxSafeInteger, RunID: fuzzIdentity.runID, Token: fuzzIdentity.token, CreatedAt: -1764765000000, Message: text}
		want, err := encodeJSON(w)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeMessage(w); string(got) != string(want) {
			t.Errorf("encodeMessage(%q):\n%s\nencodeJSON:\n%s", text, got, want)
		}
	}
}

// FuzzEncodeMessage holds encodeMessage to encodeJSON's bytes for any
// message text and id.
func FuzzEncodeMessage(f *testing.F) {
	for _, text := range fastTexts {
		f.Add("m-1", text)
	}
	f.Add("\u2029\"", "\xff\xfe\x00\u00e9\U0001F389")
	f.Fuzz(func(t *testing.T, id, text string) {
		w := wireMessage{Version: 1, ID: id, Sequence: 7, RunID: fuzzIdentity.runID, Token: fuzzIdentity.token, CreatedAt: 1700000000000, Message: text}
		want, err := encodeJSON(w)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeMessage(w); string(got) != string(want) {
			t.Fatalf("encodeMessage differs:\n%q\nencodeJSON:\n%q", got, want)
		}
	})
}

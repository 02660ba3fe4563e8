package channel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormatDeliveryHeaderMatchesReference(t *testing.T) {
	r := Receipt{Direction: ToMain, RunID: "run-1", MessageID: "msg-2"}
	want := `[Facets delivery v1] {"direction":"to-main","runId":"run-1","messageId":"msg-2"}` + "\n\n"
	if got := FormatDeliveryHeader(r); got != want {
		t.Errorf("header\n got %q\nwant %q", got, want)
	}
	// JSON.stringify escapes quotes, backslashes and control characters but
	// not <, >, &, U+2028.
	odd := Receipt{Direction: ToSub, RunID: "a\"b\\c\n\x01<&>\u2028", MessageID: "é"}
	want = `[Facets delivery v1] {"direction":"to-sub","runId":"a\"b\\c\n\u0001<&>` + "\u2028" + `","messageId":"é"}` + "\n\n"
	if got := FormatDeliveryHeader(odd); got != want {
		t.Errorf("header\n got %q\nwant %q", got, want)
	}
}

func TestParseDeliveryHeader(t *testing.T) {
	r := Receipt{Direction: ToSub, RunID: "a\"b\n<c>", MessageID: "m"}
	got, body, err := ParseDeliveryHeader(FormatDeliveryHeader(r) + "hello\n\nworld")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	if body != "hello\n\nworld" {
		t.Errorf("body %q", body)
	}
	for _, bad := range []string{
		"",
		"> [Facets delivery v1] {\"direction\":\"to-sub\",\"runId\":\"r\",\"messageId\":\"m\"}\n\nquoted",
		"  [Facets delivery v1] {\"direction\":\"to-sub\",\"runId\":\"r\",\"messageId\":\"m\"}\n\nindented",
		"[Facets delivery v1]{\"direction\":\"to-sub\",\"runId\":\"r\",\"messageId\":\"m\"}\n\nno space",
		"[Facets delivery v1] {\"direction\":\"sideways\",\"runId\":\"r\",\"messageId\":\"m\"}\n\n",
		"[Facets delivery v1] {\"direction\":\"to-sub\",\"runId\":\"\",\"messageId\":\"m\"}\n\n",
		"[Facets delivery v1] {\"direction\":\"to-sub\",\"runId\":\"r\",\"messageId\":7}\n\n",
		"[Facets delivery v1] {\"direction\":\"to-sub\",\"RunId\":\"r\",\"messageId\":\"m\"}\n\n",
		"[Facets delivery v1] {\"direction\":\"to-sub\",\n\"runId\":\"r\",\"messageId\":\"m\"}\n\n",
		"[Facets delivery v1] not json\n\n",
	} {
		if r, _, err := ParseDeliveryHeader(bad); err == nil {
			t.Errorf("accepted %q as %+v", bad, r)
		}
	}
}

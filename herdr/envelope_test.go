package herdr

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func TestParseEnvelope(t *testing.T) {
	cases := []struct {
		name, in, want string
		err            bool
	}{
		{name: "result", in: `{"id":"cli:tab:get","result":{"type":"tab_info"}}` + "\n", want: `{"type":"tab_info"}`},
		{name: "no result member", in: `{"status":"running","running":true}`, want: `{"status":"running","running":true}`},
		{name: "last JSON line wins", in: "{\"result\":{\"a\":1}}\nnoise\n{\"result\":{\"b\":2}}\n", want: `{"b":2}`},
		{name: "trailing noise skipped", in: "{\"result\":{\"a\":1}}\nbye\n", want: `{"a":1}`},
		{name: "broken last line skipped", in: "{\"result\":{\"a\":1}}\n{\"result\":\n", want: `{"a":1}`},
		{name: "non-object result", in: `{"result":[1,2]}`, want: `{"result":[1,2]}`},
		{name: "empty", in: "", err: true},
		{name: "text", in: "status: running\n", err: true},
		{name: "array", in: "[1,2,3]\n", err: true},
		{name: "null", in: "null\n", err: true},
		{name: "truncated", in: `{"id":"cli:tab:create","result":{"type":"tab_`, err: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEnvelope([]byte(tc.in))
			if tc.err {
				if !errors.Is(err, errNoJSON) {
					t.Errorf("parseEnvelope = %s, %v; want errNoJSON", got, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("parseEnvelope = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestParseErrorEnvelope(t *testing.T) {
	he, ok := parseErrorEnvelope([]byte(`{"id":"cli:tab:close","error":{"code":"tab_not_found","message":"tab w1:t9 not found"}}` + "\n"))
	if !ok || he.Code != "tab_not_found" || he.Message != "tab w1:t9 not found" {
		t.Errorf("parseErrorEnvelope = %+v, %v", he, ok)
	}
	for _, in := range []string{"", "missing required --kind\n", `{"error":{}}`, `Error: Custom { kind: Other }`, `{"result":{}}`} {
		if he, ok := parseErrorEnvelope([]byte(in)); ok {
			t.Errorf("parseErrorEnvelope(%q) = %+v, want none", in, he)
		}
	}
}

func TestParseVersion(t *testing.T) {
	good := map[string]Version{
		"herdr 0.8.2":           {0, 8, 2},
		"herdr 0.8.2\n":         {0, 8, 2},
		"0.7.5":                 {0, 7, 5},
		"v1.2.3":                {1, 2, 3},
		"herdr 0.9.0-preview.2": {0, 9, 0},
		"herdr 0.9.3+abc (x)":   {0, 9, 3},
	}
	for in, want := range good {
		if got, err := parseVersion(in); err != nil || got != want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "herdr", "herdr x.y.z", "0.8", "1.2.3.4", "herdr -1.0.0", "herdr 0..2"} {
		if got, err := parseVersion(in); err == nil {
			t.Errorf("parseVersion(%q) = %v, want an error", in, got)
		}
	}
	if !(Version{0, 7, 4}).Less(MinVersion) || MinVersion.Less(Version{0, 7, 5}) || !(Version{0, 8, 2}).Less(Version{1, 0, 0}) {
		t.Error("Version.Less is wrong")
	}
}

// FuzzParseEnvelope checks the parser never panics and, when it accepts
// input, returns a JSON object; error text stays valid UTF-8.
func FuzzParseEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"id":"cli:tab:create","result":{"type":"tab_created","tab":{"tab_id":"w1:t2"},"root_pane":{"pane_id":"w1:p2"}}}` + "\n",
		`{"id":"cli:agent:get","error":{"code":"agent_not_found","message":"x"}}`,
		"noise\n{\"result\":{}}\n\n",
		`{"result":null}`,
		"\xff\xfe{",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := parseEnvelope(data)
		if err != nil {
			if !utf8.ValidString(err.Error()) {
				t.Errorf("error is not valid UTF-8: %q", err.Error())
			}
		} else {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
				t.Errorf("accepted %q as %q, not an object", data, raw)
			}
		}
		parseErrorEnvelope(data)
		var created struct {
			Tab *struct {
				TabID string `json:"tab_id"`
			} `json:"tab"`
		}
		_ = decodeResult(data, &created)
	})
}

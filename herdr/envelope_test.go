package herdr

import (
	"encoding/json"
	"errors"
	"strings"
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
		"herdr 0.8.2":                 {Major: 0, Minor: 8, Patch: 2},
		"herdr 0.8.2\n":               {Major: 0, Minor: 8, Patch: 2},
		"0.7.5":                       {Major: 0, Minor: 7, Patch: 5},
		"v1.2.3":                      {Major: 1, Minor: 2, Patch: 3},
		"herdr 0.9.0-preview.2":       {Major: 0, Minor: 9, Patch: 0, Pre: "preview.2"},
		"herdr 0.9.3+abc (x)":         {Major: 0, Minor: 9, Patch: 3},
		"herdr 0.9.3 (abc1234)":       {Major: 0, Minor: 9, Patch: 3},
		"herdr 0.9.3-preview.7+g1a2b": {Major: 0, Minor: 9, Patch: 3, Pre: "preview.7"},
		"0.9.0-preview.2026-09-09-b9": {Major: 0, Minor: 9, Patch: 0, Pre: "preview.2026-09-09-b9"},
	}
	for in, want := range good {
		if got, err := parseVersion(in); err != nil || got != want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "herdr", "herdr x.y.z", "0.8", "1.2.3.4", "herdr -1.0.0", "herdr 0..2", "0.9.3-pre\xffview", "0.9.3-a_b", "0.9.3-" + strings.Repeat("p", maxPreLen+1)} {
		if got, err := parseVersion(in); err == nil {
			t.Errorf("parseVersion(%q) = %v, want an error", in, got)
		}
	}
	v := func(s string) Version {
		t.Helper()
		got, err := parseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Each pair is older, newer.
	for _, p := range [][2]string{
		{"0.7.4", "0.8.2"},
		{"0.8.2", "1.0.0"},
		{"0.9.3", "0.9.3-preview.1"},      // a preview is built after its release
		{"0.9.2-preview.9", "0.9.3"},      // and before the next one
		{"0.9.3-rc.1", "0.9.3-preview.1"}, // another tag is the release itself
		{"0.8.1-preview.3", "0.8.2"},
	} {
		if older, newer := v(p[0]), v(p[1]); !older.Less(newer) || newer.Less(older) {
			t.Errorf("Less: want %s older than %s", p[0], p[1])
		}
	}
	for _, p := range [][2]string{{"0.8.2", "0.8.2+x"}, {"0.9.3-rc.1", "0.9.3"}, {"0.9.3-preview.1", "0.9.3-preview.2"}} {
		if a, b := v(p[0]), v(p[1]); a.Less(b) || b.Less(a) {
			t.Errorf("Less: want %s and %s unordered", p[0], p[1])
		}
	}
}

// TestModelledFor: a build newer than the release Facets follows for its
// line is noted, naming both; 0.8.2 to 0.9.3 and their earlier previews
// are not.
func TestModelledFor(t *testing.T) {
	for in, want := range map[string]string{
		"0.8.2":               "",
		"0.8.3":               "0.8.2",
		"0.8.2-preview.1":     "0.8.2",
		"0.9.0":               "",
		"0.9.2-preview.4":     "",
		"0.9.3":               "",
		"0.9.3-rc.2":          "",
		"0.9.3-preview.1":     "0.9.3",
		"0.9.4":               "0.9.3",
		"0.10.0":              "0.9.3",
		"1.0.0":               "0.9.3",
		"herdr 0.9.3 (abc)":   "",
		"herdr 0.9.3+build.5": "",
		"herdr 0.8.3+build.5": "0.8.2",
	} {
		v, err := parseVersion(in)
		if err != nil {
			t.Fatalf("parseVersion(%q): %v", in, err)
		}
		got := ""
		if m := modelledFor(v); m.Less(v) {
			got = m.String()
		}
		if got != want {
			t.Errorf("%s: newer than %q, want %q", in, got, want)
		}
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

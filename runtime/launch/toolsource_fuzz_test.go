package launch

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseToolSource feeds ParseToolSource a tool's provenance as the Pi
// extension passes it on the command line (NAME=PATH or Pi's sourceInfo as
// JSON). It must never panic; a refusal quotes the value; an accepted one
// names a tool, is exactly one JSON object when it is JSON (nothing after
// it dropped), and the same provenance written as JSON (when it is valid
// UTF-8) parses back to it.
func FuzzParseToolSource(f *testing.F) {
	for _, seed := range []string{
		`read=builtin:read`, `grep=<builtin:grep>`, `web=/home/me/.pi/agent/extensions/web/index.ts`, `a=b=c`, `=x`, `noequals`,
		`{"name":"web","path":"/ext/web.ts","source":"local"}`, `{"name":"x","path":"<sdk>","source":"sdk"}`,
		`{"name":"x","extra":1}`, `{"name":""}`, `{"name":"x"} trailing`, `{"name":"\ud800"}`, `{`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		name, src, err := ParseToolSource(v)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(v)) {
				t.Fatalf("refusal does not quote the value: %v", err)
			}
			return
		}
		if name == "" {
			t.Fatalf("accepted %q without a tool name", v)
		}
		if strings.HasPrefix(v, "{") && !json.Valid([]byte(v)) {
			t.Fatalf("accepted %q, which is not one JSON object", v)
		}
		if !strings.HasPrefix(v, "{") {
			builtin := strings.HasPrefix(src.Path, "builtin:") || strings.HasPrefix(src.Path, "<builtin:")
			if name+"="+src.Path != v || (src.Source == "builtin") != builtin || (src.Source != "" && !builtin) {
				t.Fatalf("%q parsed as %q %+v", v, name, src)
			}
		}
		if !utf8.ValidString(name) || !utf8.ValidString(src.Path) || !utf8.ValidString(src.Source) {
			return // JSON text cannot carry it; a NAME=PATH path may be any bytes
		}
		again, err := json.Marshal(map[string]string{"name": name, "path": src.Path, "source": src.Source})
		if err != nil {
			t.Fatal(err)
		}
		name2, src2, err := ParseToolSource(string(again))
		if err != nil || name2 != name || src2 != src {
			t.Fatalf("%q -> %q %+v; as JSON %s -> %q %+v, %v", v, name, src, again, name2, src2, err)
		}
	})
}

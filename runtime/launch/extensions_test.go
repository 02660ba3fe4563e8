package launch

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestResolveExtensions(t *testing.T) {
	dir := t.TempDir()
	web := filepath.Join(dir, "web.ts")
	if err := os.WriteFile(web, []byte("export default () => {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkg, 0o700); err != nil {
		t.Fatal(err)
	}
	// A unix socket is neither a file nor a directory. Its path must stay
	// short (sun_path), hence a short temp dir of its own.
	sockDir, err := os.MkdirTemp("", "fx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	missing := filepath.Join(dir, "gone.ts")
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relative, err := filepath.Rel(cwd, web)
	if err != nil {
		t.Fatal(err)
	}

	sources := map[string]ToolSource{
		"read":          {Path: "<builtin:read>", Source: "builtin"},
		"bash":          {Path: "builtin:bash", Source: "builtin"},
		"ls":            {Path: "builtin:find", Source: "builtin"},
		"codemode":      {Path: "builtin:codemode", Source: "builtin"},
		"tool_search":   {Path: "builtin:tool-search", Source: "builtin"},
		"todo":          {Path: "builtin:todo", Source: "builtin"},
		"web_search":    {Path: web, Source: "npm:pi-web-access"},
		"fetch_content": {Path: web, Source: "npm:pi-web-access"},
		"relative":      {Path: relative, Source: "local"},
		"packaged":      {Path: pkg, Source: "git:example.com/pkg"},
		"sdk_tool":      {Path: "/usr/lib/sdk.ts", Source: "sdk"},
		"inline":        {Path: "<inline:tool>", Source: "inline"},
		"pathless":      {Path: "", Source: "local"},
		"vanished":      {Path: missing, Source: "local"},
		"socket":        {Path: sock, Source: "local"},
	}
	tests := []struct {
		name    string
		tools   []string
		want    []string
		wantErr string
	}{
		{name: "native builtins need nothing", tools: []string{"read", "bash"}, want: []string{}},
		{name: "MCP tools are skipped even when absent", tools: []string{"mcp__github__search", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"}, want: []string{}},
		{name: "extension paths deduplicated in tool order", tools: []string{"read", "web_search", "packaged", "fetch_content"}, want: []string{web, pkg}},
		{name: "supported isolated builtins", tools: []string{"tool_search", "codemode"}, want: []string{"builtin:tool-search", "builtin:codemode"}},
		{name: "relative path made absolute", tools: []string{"relative"}, want: []string{web}},
		{name: "unavailable tool", tools: []string{"read", "nope"}, wantErr: "Profile 'research' references unavailable tool 'nope'."},
		{name: "native name with a foreign builtin path", tools: []string{"ls"}, wantErr: "Profile 'research' tool 'ls' requires unsupported isolated built-in extension 'builtin:find'."},
		{name: "unsupported builtin extension", tools: []string{"todo"}, wantErr: "Profile 'research' tool 'todo' requires unsupported isolated built-in extension 'builtin:todo'."},
		{name: "sdk tool", tools: []string{"sdk_tool"}, wantErr: "Profile 'research' tool 'sdk_tool' cannot be loaded in an isolated Sub process."},
		{name: "synthetic path", tools: []string{"inline"}, wantErr: "Profile 'research' tool 'inline' cannot be loaded in an isolated Sub process."},
		{name: "empty path", tools: []string{"pathless"}, wantErr: "Profile 'research' tool 'pathless' cannot be loaded in an isolated Sub process."},
		{name: "missing extension", tools: []string{"web_search", "vanished"}, wantErr: "Profile 'research' tool 'vanished' extension is missing: " + missing + "."},
		{name: "neither file nor directory", tools: []string{"socket"}, wantErr: "Profile 'research' tool 'socket' has an unsupported extension path: " + sock + "."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveExtensions("research", tc.tools, sources)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q (result %q)", err, tc.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("extensions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgsLoadResolvedExtensions(t *testing.T) {
	m, _ := exampleManifest(t, true)
	p := profile(t, m, m.Profiles[0].Name)
	p.Launch.Extensions = []string{"/ext/web.ts", "builtin:codemode", "/bridge/index.ts"}
	args := Spec{Profile: p, Bridge: "/bridge/index.ts", Title: "t"}.Args()
	var exts []string
	for i, a := range args {
		if a == "-e" {
			exts = append(exts, args[i+1])
		}
	}
	want := []string{"/bridge/index.ts", "/ext/web.ts", "builtin:codemode", "builtin:tool-search", "builtin:mcp"}
	if diff := cmp.Diff(want, exts); diff != "" {
		t.Errorf("-e values (-want +got):\n%s", diff)
	}
}

// parseToolSourceCases are the --tool-source values with what
// ParseToolSource makes of them; they also seed FuzzParseToolSource.
var parseToolSourceCases = []struct {
	in      string
	name    string
	src     ToolSource
	wantErr string
}{
	{in: "read=builtin:read", name: "read", src: ToolSource{Path: "builtin:read", Source: "builtin"}},
	{in: "grep=<builtin:grep>", name: "grep", src: ToolSource{Path: "<builtin:grep>", Source: "builtin"}},
	{in: "a=b=c", name: "a", src: ToolSource{Path: "b=c"}},
	{in: `{"name":"web","path":"/e/web.ts","source":"npm:web"}`, name: "web", src: ToolSource{Path: "/e/web.ts", Source: "npm:web"}},
	{in: ` {"name":"web"} `, wantErr: "want NAME=PATH"},
	{in: "noequals", wantErr: "want NAME=PATH"},
	{in: "=x", wantErr: "names no tool"},
	{in: `{"name":"x","extra":1}`, wantErr: "unknown field"},
	// A second value would be dropped unseen: the whole argument must
	// be one object.
	{in: `{"name":"a"}{"name":"b"}`, wantErr: "after the JSON object"},
	{in: `{"name":"a"} trailing`, wantErr: "after the JSON object"},
	{in: "{\"name\":\"a\"}\n", name: "a"},
	{in: "web=/home/me/.pi/agent/extensions/web/index.ts", name: "web", src: ToolSource{Path: "/home/me/.pi/agent/extensions/web/index.ts"}},
	{in: `{"name":"x","path":"<sdk>","source":"sdk"}`, name: "x", src: ToolSource{Path: "<sdk>", Source: "sdk"}},
	{in: `{"name":""}`, wantErr: "names no tool"},
	{in: `{`, wantErr: "unexpected EOF"},
	// A lone surrogate cannot be a Go string; decoding makes it U+FFFD.
	{in: `{"name":"\ud800"}`, name: "\uFFFD"},
}

func TestParseToolSource(t *testing.T) {
	for _, tc := range parseToolSourceCases {
		name, src, err := ParseToolSource(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), strconv.Quote(tc.in)) {
				t.Errorf("ParseToolSource(%q) = %q, %+v, %v; want an error quoting it with %q", tc.in, name, src, err, tc.wantErr)
			}
			continue
		}
		if err != nil || name != tc.name || src != tc.src {
			t.Errorf("ParseToolSource(%q) = %q, %+v, %v; want %q, %+v", tc.in, name, src, err, tc.name, tc.src)
		}
	}
}

// FuzzParseToolSource feeds ParseToolSource a tool's provenance as the Pi
// extension passes it on the command line (NAME=PATH or Pi's sourceInfo as
// JSON). It must never panic; a refusal quotes the value; an accepted one
// names a tool, is exactly one JSON object when it is JSON (nothing after
// it dropped), and the same provenance written as JSON (when it is valid
// UTF-8) parses back to it.
func FuzzParseToolSource(f *testing.F) {
	for _, tc := range parseToolSourceCases {
		f.Add(tc.in)
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

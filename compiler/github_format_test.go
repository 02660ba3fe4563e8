package compiler

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// annotation is one workflow command as the GitHub Actions runner reads it.
type annotation struct {
	level string
	props map[string]string
	data  string
}

// parseWorkflowCommand reads one line by GitHub's documented syntax
// (docs.github.com, "Workflow commands for GitHub Actions"):
// ::error file={name},line={line},col={col},title={title}::{message},
// properties separated by commas, and the escapes of actions/toolkit's
// command.ts undone: %25 %0D %0A in the message, plus %3A %2C in property
// values. It rejects what the runner would misread: an unknown command or
// property, a property without '=', or a raw ':' or ',' inside a value.
func parseWorkflowCommand(t *testing.T, line string) annotation {
	t.Helper()
	rest, ok := strings.CutPrefix(line, "::")
	if !ok {
		t.Fatalf("%q: not a workflow command", line)
	}
	head, data, ok := strings.Cut(rest, "::")
	if !ok {
		t.Fatalf("%q: no '::' before the message", line)
	}
	level, propText, _ := strings.Cut(head, " ")
	switch level {
	case "error", "warning", "notice":
	default:
		t.Fatalf("%q: command %q is not an annotation", line, level)
	}
	unData := strings.NewReplacer("%25", "%", "%0D", "\r", "%0A", "\n")
	unProp := strings.NewReplacer("%25", "%", "%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",")
	a := annotation{level: level, props: map[string]string{}, data: unData.Replace(data)}
	if strings.ContainsAny(data, "\r\n") {
		t.Errorf("%q: raw line break in the message", line)
	}
	if propText == "" {
		return a
	}
	for _, kv := range strings.Split(propText, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("%q: property %q has no value", line, kv)
		}
		switch k {
		case "file", "line", "endLine", "col", "endColumn", "title":
		default:
			t.Fatalf("%q: unknown property %q", line, k)
		}
		if strings.ContainsAny(v, ":\r\n") {
			t.Errorf("%q: property %s=%q holds an unescaped ':' or line break", line, k, v)
		}
		a.props[k] = unProp.Replace(v)
	}
	return a
}

// TestGitHubAnnotationsRoundTrip writes diagnostics whose paths and text
// hold every character GitHub's syntax reserves and reads them back with
// the runner's rules: each field must come back unchanged.
func TestGitHubAnnotationsRoundTrip(t *testing.T) {
	ds := []Diagnostic{
		{Severity: Error, Code: "unknown-field", File: "/base/p,1/a:b/100%/config.json", Line: 4, Column: 7,
			Message: "unknown field \"tols\": 50% off, a::b\nsecond line\r", Hint: "did you mean \"tools\"? %0A stays literal"},
		{Severity: Warning, Code: "model-format", File: "/base/x.json", Line: 2, Message: "plain"},
		{Severity: Info, Code: "untrusted-project", File: "/elsewhere/.pi/facets", Message: "note, with comma"},
		{Severity: Error, Code: "unknown-profile", Message: "no file at all"},
	}
	var buf bytes.Buffer
	if err := WriteDiagnostics(&buf, FormatGitHub, "/base", ds); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(ds) {
		t.Fatalf("%d lines for %d diagnostics:\n%s", len(lines), len(ds), buf.String())
	}
	wantLevel := map[Severity]string{Error: "error", Warning: "warning", Info: "notice"}
	wantFile := []string{"p,1/a:b/100%/config.json", "x.json", "/elsewhere/.pi/facets", ""}
	for i, d := range ds {
		a := parseWorkflowCommand(t, lines[i])
		if a.level != wantLevel[d.Severity] {
			t.Errorf("line %d: level %q, want %q", i, a.level, wantLevel[d.Severity])
		}
		if a.props["file"] != wantFile[i] {
			t.Errorf("line %d: file %q, want %q", i, a.props["file"], wantFile[i])
		}
		if got, want := a.props["line"], itoaOrEmpty(d.Line); got != want {
			t.Errorf("line %d: line=%q, want %q", i, got, want)
		}
		if got, want := a.props["col"], itoaOrEmpty(d.Column); got != want {
			t.Errorf("line %d: col=%q, want %q", i, got, want)
		}
		if a.props["title"] != "facets "+d.Code {
			t.Errorf("line %d: title %q", i, a.props["title"])
		}
		want := d.Message
		if d.Hint != "" {
			want += "\nhint: " + d.Hint
		}
		if a.data != want {
			t.Errorf("line %d: message %q, want %q", i, a.data, want)
		}
	}
}

func itoaOrEmpty(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// TestGitHubPathsThroughSymlinks: with the workspace, or the directory
// discovery named files from, reached through a symlink, an annotation's
// file= is still relative to the workspace (GitHub drops an absolute one);
// a file outside it stays absolute.
func TestGitHubPathsThroughSymlinks(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "real", "repo")
	link := filepath.Join(tmp, "link")
	if err := os.MkdirAll(filepath.Join(real, ".pi", "facets", "profiles", "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(tmp, "agent", "facets", "profiles", "q", "config.json")
	const rel = ".pi/facets/profiles/p/config.json"
	for _, tc := range []struct {
		name, workspace, file, want string
	}{
		{"workspace through a symlink", link, filepath.Join(real, rel), rel},
		{"files through a symlink", real, filepath.Join(link, rel), rel},
		{"both the same way", link, filepath.Join(link, rel), rel},
		{"a file outside", link, outside, outside},
	} {
		var buf bytes.Buffer
		ds := []Diagnostic{{Severity: Error, Code: "c", File: tc.file, Line: 1, Column: 1, Message: "m"}}
		if err := WriteDiagnostics(&buf, FormatGitHub, GitHubBase(tc.workspace, tc.workspace), ds); err != nil {
			t.Fatal(err)
		}
		if got := parseWorkflowCommand(t, strings.TrimSuffix(buf.String(), "\n")).props["file"]; got != tc.want {
			t.Errorf("%s: file=%s, want %s", tc.name, got, tc.want)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileName holds an OSC title sequence, BEL, a colour code and a newline
// followed by a forged diagnostic line.
const hostileName = "x\x1b]0;pwned\x07\x1b[2J\nforged.json:1:1: error: forged [forged]"

// rawControl reports the first control character other than newline and
// tab (which the output format itself uses) in s.
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0) {
			return r, true
		}
	}
	return 0, false
}

// TestTextOutputEscapesFileNames: file names and file contents never reach
// the terminal raw in check's text diagnostics or facets profiles.
func TestTextOutputEscapesFileNames(t *testing.T) {
	agent := t.TempDir()
	for rel, data := range map[string]string{
		"facets/profiles/" + hostileName + "/config.json": `{"version":1,"name":"y","tools":["read"]}`,
		"facets/profiles/ok/config.json":                  `{"version":1,"name":"ok","tools":["read"],"description":"\u001b[31mred\u0007 line\nforged"}`,
	} {
		p := filepath.Join(agent, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"check", "--agent-dir", agent, "-C", agent},
		{"profiles", "--agent-dir", agent, "-C", agent},
	} {
		_, out, errOut := runCLI(t, "", args...)
		for _, s := range []string{out, errOut} {
			if r, ok := rawControl(s); ok {
				t.Errorf("facets %s printed control character %U raw:\n%q", args[0], r, s)
			}
			for _, line := range strings.Split(s, "\n") {
				if strings.HasPrefix(line, "forged") {
					t.Errorf("facets %s printed a forged line: %q", args[0], s)
				}
			}
		}
		if !strings.Contains(out, `\x1b]0;pwned\x07`) {
			t.Errorf("facets %s does not show the escaped name:\n%s", args[0], out)
		}
	}
}

// TestErrorsEscapeFileNames: an error naming a path prints it escaped.
func TestErrorsEscapeFileNames(t *testing.T) {
	missing := filepath.Join(t.TempDir(), hostileName)
	code, out, errOut := runCLI(t, "", "check", "--agent-dir", t.TempDir(), "-C", missing)
	if code != exitUsage || !strings.Contains(errOut, `pwned\x07`) {
		t.Fatalf("exit %d, stderr %q; want a usage error naming the escaped path", code, errOut)
	}
	for _, s := range []string{out, errOut} {
		if r, ok := rawControl(strings.TrimSuffix(s, "\n")); ok || strings.Count(strings.TrimSuffix(s, "\n"), "\n") > 0 {
			t.Errorf("raw control character %U or extra line in %q", r, s)
		}
	}
}

// TestExplainEscapesFileNames: explain prints skill refs and paths that
// come from files escaped too.
func TestExplainEscapesFileNames(t *testing.T) {
	agent := t.TempDir()
	dir := filepath.Join(agent, "facets", "profiles", "ok")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	skill := "s\x1b[2J\nforged.md"
	os.WriteFile(filepath.Join(dir, skill), []byte("skill"), 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"version":1,"name":"ok","tools":["read"],"skills":["./s\u001b[2J\nforged.md"]}`), 0o644)
	code, out, errOut := runCLI(t, "", "explain", "ok", "--agent-dir", agent, "-C", agent)
	if code != exitOK || !strings.Contains(out, `s\x1b[2J\nforged.md`) {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s\nwant the escaped skill path", code, out, errOut)
	}
	if r, ok := rawControl(out); ok {
		t.Errorf("explain printed %U raw:\n%q", r, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "forged") {
			t.Errorf("explain printed a forged line: %q", out)
		}
	}
}

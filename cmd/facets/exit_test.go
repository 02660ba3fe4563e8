package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExitCodes pins the documented exit status of each outcome: 0 ok, 1
// diagnostics, 2 usage (flags, arguments, subcommands, directories named
// on the command line), 3 a failure to do the work (I/O, the environment).
func TestExitCodes(t *testing.T) {
	write := func(root, rel, data string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agent, clean, bad := t.TempDir(), t.TempDir(), t.TempDir()
	write(agent, "facets/profiles/good/config.json", `{"version":1,"name":"good","tools":["read"]}`)
	write(bad, "facets/profiles/bad/config.json", `{"version":1,"name":"bad"}`)
	shadow := t.TempDir()
	write(shadow, ".pi/facets/profiles/bad/config.json", `{"version":1,"name":"bad","tools":["read"]}`)
	warn := t.TempDir()
	if err := os.MkdirAll(filepath.Join(warn, "facets", "MAIN.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"clean", []string{"check", "--agent-dir", agent}, exitOK},
		{"empty tree warns", []string{"check", "--agent-dir", clean}, exitOK},
		{"empty tree strict", []string{"check", "--strict", "--agent-dir", clean}, exitDiagnostics},
		{"missing agent dir", []string{"check", "--agent-dir", filepath.Join(clean, "missing")}, exitUsage},
		{"masked invalid global", []string{"compile", "--agent-dir", bad, "-C", shadow, "--trust", "bad", "--out", filepath.Join(t.TempDir(), "m.json")}, exitOK},
		{"errors", []string{"check", "--agent-dir", bad}, exitDiagnostics},
		{"warnings pass", []string{"check", "--agent-dir", warn}, exitOK},
		{"strict warnings fail", []string{"check", "--strict", "--agent-dir", warn}, exitDiagnostics},
		{"compile errors", []string{"compile", "--agent-dir", bad, "--out", filepath.Join(t.TempDir(), "m.json")}, exitDiagnostics},
		{"unknown flag", []string{"check", "--bogus"}, exitUsage},
		{"bad format", []string{"check", "--format", "xml", "--agent-dir", agent}, exitUsage},
		{"unwritable out (a file where a directory must be)", []string{"compile", "--agent-dir", agent, "--out", filepath.Join(agent, "facets", "profiles", "good", "config.json", "m.json")}, exitFailure},
		{"missing cwd", []string{"check", "--agent-dir", agent, "-C", filepath.Join(agent, "missing")}, exitUsage},
		{"unknown command", []string{"frobnicate"}, exitUsage},
		{"misspelt command", []string{"chek"}, exitUsage},
		{"unknown subcommand", []string{"new", "profiel", "x"}, exitUsage},
		{"unknown channel subcommand", []string{"channel", "bogus"}, exitUsage},
		{"group alone prints help", []string{"new"}, exitOK},
		{"too many args", []string{"verify", "a", "b"}, exitUsage},
		{"missing arg", []string{"explain"}, exitUsage},
		{"path for a profile name", []string{"check", "--agent-dir", agent, ".pi/facets/profiles/good/config.json"}, exitUsage},
		{"exclusive flags", []string{"check", "--trust", "--no-trust", "--agent-dir", agent}, exitUsage},
		{"bad flag value", []string{"check", "--strict=maybe"}, exitUsage},
		{"new bad name", []string{"new", "profile", "a/b", "--agent-dir", agent}, exitUsage},
		{"new missing agent dir", []string{"new", "profile", "x", "--agent-dir", filepath.Join(clean, "missing")}, exitUsage},
		{"schema install missing agent dir", []string{"schema", "--install", "--agent-dir", filepath.Join(clean, "missing")}, exitUsage},
		{"version", []string{"version"}, exitOK},
		{"version takes no args", []string{"version", "x"}, exitUsage},
		{"verify missing manifest", []string{"verify", filepath.Join(clean, "none.json")}, exitFailure},
		{"new over an existing file", []string{"new", "profile", "good", "--agent-dir", agent}, exitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != tc.want {
				t.Errorf("facets %v: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
			}
		})
	}
}

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExitCodes pins the documented exit status of each outcome.
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
		{"unwritable out", []string{"compile", "--agent-dir", agent, "--out", filepath.Join(agent, "no", "such", "dir", "m.json")}, exitUsage},
		{"missing cwd", []string{"check", "--agent-dir", agent, "-C", filepath.Join(agent, "missing")}, exitUsage},
		{"unknown command", []string{"frobnicate"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != tc.want {
				t.Errorf("facets %v: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
			}
		})
	}
}

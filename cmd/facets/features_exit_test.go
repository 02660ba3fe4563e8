package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"
)

// TestFeatureExitCodes pins the exit status of verify, explain and new:
// 0 success, 1 a stale snapshot or an unresolved name, 2 usage, 3 I/O.
func TestFeatureExitCodes(t *testing.T) {
	t.Parallel()
	agent := t.TempDir()
	env := map[string]string{envvar.AgentDir: agent}
	p := filepath.Join(agent, "facets", "profiles", "good", "config.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(`{"version":1,"name":"good","tools":["read"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "m.json")
	if code, _, errOut := runApp(t, env, "", "compile", "--out", manifest); code != exitOK {
		t.Fatalf("compile: %d %s", code, errOut)
	}
	run := func(name string, want int, args ...string) {
		t.Helper()
		if code, out, errOut := runApp(t, env, "", args...); code != want {
			t.Errorf("%s: facets %v: exit %d, want %d\nstdout: %s\nstderr: %s", name, args, code, want, out, errOut)
		}
	}
	run("current", exitOK, "verify", manifest)
	run("explain known", exitOK, "explain", "good")
	run("explain unknown", exitDiagnostics, "explain", "god")
	run("explain bad format", exitUsage, "explain", "--format", "github", "good")
	run("verify missing", exitFailure, "verify", filepath.Join(agent, "none.json"))
	run("verify bad format", exitUsage, "verify", "--format", "xml", manifest)
	run("new profile", exitOK, "new", "profile", "fresh")
	run("new profile exists", exitFailure, "new", "profile", "fresh")
	run("new profile bad name", exitUsage, "new", "profile", "a/b")
	run("new role", exitOK, "new", "role", "scout")
	run("schema install", exitOK, "schema", "--install")
	// The new profile is a source the snapshot has not seen.
	run("stale", exitDiagnostics, "verify", manifest)
	// A snapshot committed in a project and copied to another is stale.
	projA, projB := t.TempDir(), t.TempDir()
	for _, d := range []string{projA, projB} {
		os.MkdirAll(filepath.Join(d, ".pi"), 0o755)
	}
	committed := filepath.Join(projA, "facets.manifest.json")
	run("compile in projA", exitOK, "compile", "-C", projA, "--out", committed)
	run("verify in projA", exitOK, "verify", committed)
	b, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(projB, "facets.manifest.json")
	if err := os.WriteFile(copied, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run("moved", exitDiagnostics, "verify", copied)
}

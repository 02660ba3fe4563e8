package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// TestHostileFiles puts a FIFO, /dev/zero and an oversized file in place of
// every file kind the profiles layer reads; each must be reported, naming
// the file, without blocking or reading it whole.
func TestHostileFiles(t *testing.T) {
	kinds := []struct {
		name  string
		file  string // relative to the temp root
		limit int64
		// read returns what was reported about the file.
		read func(root string) string
	}{
		{"trust.json", "agent/trust.json", MaxSettingsBytes, func(root string) string {
			_, err := DecideTrust(Env{AgentDir: filepath.Join(root, "agent"), Cwd: root}, nil, nil)
			return fmt.Sprint(err)
		}},
		{"settings.json", "agent/settings.json", MaxSettingsBytes, func(root string) string {
			_, err := DecideTrust(Env{AgentDir: filepath.Join(root, "agent"), Cwd: root}, nil, nil)
			return fmt.Sprint(err)
		}},
		{"package.json", "pack/package.json", maxPackageJSONBytes, func(root string) string {
			_, probs := DiscoverRoles(RoleSources{Packs: []string{filepath.Join(root, "pack", "roles")}})
			return fmt.Sprint(probs)
		}},
		{"role", "pack/roles/r.md", MaxRoleFileBytes, func(root string) string {
			_, probs := DiscoverRoles(RoleSources{Packs: []string{filepath.Join(root, "pack", "roles")}})
			return fmt.Sprint(probs)
		}},
		{"config.json", "agent/facets/profiles/p/config.json", MaxConfigBytes, func(root string) string {
			return fmt.Sprint(ScanProfiles(filepath.Join(root, "agent/facets/profiles"), Global).Entries)
		}},
		{"instructions.md", "agent/facets/profiles/p/instructions.md", MaxInstructionsBytes, func(root string) string {
			return fmt.Sprint(ScanProfiles(filepath.Join(root, "agent/facets/profiles"), Global).Entries)
		}},
		{"MAIN.md", "agent/facets/MAIN.md", MaxMainBytes, func(root string) string {
			_, probs := MainFiles(Env{AgentDir: filepath.Join(root, "agent"), Cwd: root}, false)
			return fmt.Sprint(probs)
		}},
	}
	for _, k := range kinds {
		for _, c := range safefiletest.Cases(k.limit) {
			t.Run(k.name+"/"+c.Name, func(t *testing.T) {
				root := t.TempDir()
				for _, d := range []string{"agent/facets/profiles/p", "pack/roles"} {
					os.MkdirAll(filepath.Join(root, d), 0o700)
				}
				os.WriteFile(filepath.Join(root, "agent/facets/profiles/p/config.json"), []byte(`{"version":1,"name":"p","tools":["read"]}`), 0o600)
				os.WriteFile(filepath.Join(root, "pack/roles/r.md"), []byte("---\ndescription: R\n---\nR.\n"), 0o600)
				path := filepath.Join(root, k.file)
				c.Make(t, path)
				var got string
				safefiletest.Within(t, func() { got = k.read(root) })
				if !strings.Contains(got, filepath.Base(path)) {
					t.Fatalf("%s as %s: reported %q, want a problem naming it", k.name, c.Name, got)
				}
				want := "regular file"
				if c.Name == "oversized" {
					want = "exceeds"
				}
				if !strings.Contains(got, want) && !(c.Name == "oversized" && strings.Contains(got, "limit")) {
					t.Errorf("%s as %s: reported %q, want it to say %q", k.name, c.Name, got, want)
				}
			})
		}
	}
}

// TestMainFilesSeverity checks that MAIN.md never stops a compile: a blank
// file is information, a file that cannot be used a warning, and both name
// the file.
func TestMainFilesSeverity(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		dir     bool // MAIN.md is a directory instead
		code    string
		sev     diag.Severity
	}{
		{"blank", " \n\n", false, "empty-main", diag.Info},
		{"invalid utf-8", "policy \xff\n", false, "invalid-utf8-main", diag.Warning},
		{"directory", "", true, "not-regular-main", diag.Warning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := filepath.Join(t.TempDir(), "agent")
			path := filepath.Join(agent, "facets", "MAIN.md")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.dir {
				err = os.Mkdir(path, 0o755)
			} else {
				err = os.WriteFile(path, []byte(tc.content), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			files, probs := MainFiles(Env{AgentDir: agent, Cwd: t.TempDir()}, false)
			if len(files) != 0 || len(probs) != 1 {
				t.Fatalf("MainFiles = %d files, problems %+v; want no file and one problem", len(files), probs)
			}
			if p := probs[0]; p.Code != tc.code || p.Severity != tc.sev || p.File != path {
				t.Errorf("problem = %s %s %s; want %s %s %s", p.Severity, p.Code, p.File, tc.sev, tc.code, path)
			}
		})
	}
}

package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/diag"
	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// TestPrivateSkillsWalkIsBounded: a skills/ that leads to /, into /proc,
// /sys or /dev, too deep or too wide stops with exactly one problem.
func TestPrivateSkillsWalkIsBounded(t *testing.T) {
	const testEntries = 200 // the real limit, scaled down to keep the test fast
	cases := []struct {
		name  string
		setup func(t *testing.T, skills string)
		want  string
	}{
		{"symlink to root", func(t *testing.T, skills string) { os.Symlink("/", skills) }, "skills walk stopped"},
		{"symlink to proc", func(t *testing.T, skills string) { os.Symlink("/proc", skills) }, "/proc"},
		{"symlink to sys", func(t *testing.T, skills string) { os.Symlink("/sys", skills) }, "/sys"},
		{"entry into dev", func(t *testing.T, skills string) {
			os.Mkdir(skills, 0o755)
			os.Symlink("/dev", filepath.Join(skills, "devices"))
		}, "/dev"},
		{"too deep", func(t *testing.T, skills string) {
			deep := skills
			for i := 0; i <= MaxSkillDepth; i++ {
				deep = filepath.Join(deep, fmt.Sprintf("d%d", i))
			}
			if err := os.MkdirAll(deep, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "levels below skills/"},
		{"too many entries", func(t *testing.T, skills string) {
			os.Mkdir(skills, 0o755)
			for i := 0; i <= testEntries; i++ {
				if err := os.WriteFile(filepath.Join(skills, fmt.Sprintf("s%05d.md", i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, fmt.Sprintf("after %d entries", testEntries)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, filepath.Join(dir, "skills"))
			var probs []diag.Diagnostic
			safefiletest.Within(t, func() { _, probs = privateSkills(dir, "p", MaxSkillDepth, testEntries) })
			if len(probs) != 1 || probs[0].Code != "skills-walk-stopped" || !strings.Contains(probs[0].Message, tc.want) {
				t.Fatalf("problems = %+v, want one skills-walk-stopped mentioning %q", probs, tc.want)
			}
		})
	}
}

// TestPrivateSkillsWithinBounds: a tree at the depth limit still loads.
func TestPrivateSkillsWithinBounds(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "skills")
	for i := 1; i <= MaxSkillDepth; i++ {
		deep = filepath.Join(deep, fmt.Sprintf("d%d", i))
	}
	os.MkdirAll(deep, 0o755)
	os.WriteFile(filepath.Join(deep, "SKILL.md"), []byte("x"), 0o644)
	skills, probs := PrivateSkills(dir, "p")
	if len(probs) != 0 || len(skills) != 1 {
		t.Fatalf("skills %v, problems %+v", skills, probs)
	}
}

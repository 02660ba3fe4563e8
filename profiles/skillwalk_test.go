package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/facets-dev/facets/internal/diag"
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
			safefiletest.Within(t, func() { _, probs = privateSkills(dir, "p", nil, MaxSkillDepth, testEntries, stat) })
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
	skills, probs := PrivateSkills(dir, "p", nil)
	if len(probs) != 0 || len(skills) != 1 {
		t.Fatalf("skills %v, problems %+v", skills, probs)
	}
}

// TestRealPathsMatchesEvalSymlinks: the cached resolution gives what
// filepath.EvalSymlinks gives, for symlinked ancestors, symlinked leaves,
// chains, relative links, missing paths and the root, asked in an order
// that makes later paths hit the cache.
func TestRealPathsMatchesEvalSymlinks(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(base, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	mk("real/profiles/a/skills")
	mk("real/profiles/b")
	mk("other/skills")
	ln(filepath.Join(base, "real"), "abs")                  // absolute link to a directory
	ln("real/profiles", "rel")                              // relative link
	ln("abs", "chain")                                      // link to a link
	ln(filepath.Join(base, "other"), "real/profiles/b/dir") // link below a plain directory
	var r RealPaths
	for _, p := range []string{
		"abs/profiles/a/skills", "abs/profiles/a", "abs/profiles/b/dir/skills",
		"rel/a/skills", "chain/profiles/a/skills", "real/profiles/a/skills",
		"real/profiles/b/dir", "missing/x", "abs/missing", "rel/../rel/a",
	} {
		full := filepath.Join(base, p)
		want, err := filepath.EvalSymlinks(full)
		if err != nil {
			want = full
		}
		if got := r.Real(full); got != want {
			t.Errorf("Real(%s) = %s, want %s", p, got, want)
		}
		if got := r.Real(full); got != want { // now with its ancestors from the cache
			t.Errorf("Real(%s) again = %s, want %s", p, got, want)
		}
	}
	if got := r.Real("/"); got != "/" {
		t.Errorf("Real(/) = %s", got)
	}
}

// TestPrivateSkillsReportSpecialFiles: a FIFO or a link to /dev/zero
// where a skill file would be is a problem naming it, never a skill that
// silently vanishes from the launch (named in "skills", the same file is
// an unknown-skill error). Special files that could be no skill are
// ignored like any other non-skill file.
func TestPrivateSkillsReportSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	skills := filepath.Join(dir, "skills")
	os.MkdirAll(filepath.Join(skills, "d"), 0o755)
	os.WriteFile(filepath.Join(skills, "ok.md"), []byte("x"), 0o644)
	for _, p := range []string{"a.md", "d/SKILL.md", "notes"} {
		if err := syscall.Mkfifo(filepath.Join(skills, p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/dev/zero", filepath.Join(skills, "z.md"))
	var got []string
	var probs []diag.Diagnostic
	safefiletest.Within(t, func() { got, probs = PrivateSkills(dir, "p", nil) })
	if want := []string{filepath.Join(skills, "ok.md")}; !slices.Equal(got, want) {
		t.Errorf("skills = %v, want %v", got, want)
	}
	var files []string
	for _, p := range probs {
		if p.Code != "unreadable-skills" || p.Severity != diag.Error || !strings.Contains(p.Message, p.File) {
			t.Errorf("problem %+v", p)
		}
		name := strings.TrimPrefix(p.File, skills+"/")
		files = append(files, name)
		if kind := map[bool]string{true: "a character device", false: "a named pipe"}[name == "z.md"]; !strings.Contains(p.Message, " is "+kind+", not a regular file") {
			t.Errorf("%s: message %q does not say it is %s", name, p.Message, kind)
		}
	}
	slices.Sort(files)
	if want := []string{"a.md", "d/SKILL.md", "z.md"}; !slices.Equal(files, want) {
		t.Errorf("problems name %v, want %v", files, want)
	}
}

// TestRootSkillFileMatchesAsFileSystemDoes: on a case-insensitive file
// system (modelled by a stat that folds case, as macOS's default does)
// skills/skill.md is skills/SKILL.md, which makes skills/ one skill.
func TestRootSkillFileMatchesAsFileSystemDoes(t *testing.T) {
	dir := t.TempDir()
	skills := filepath.Join(dir, "skills")
	os.Mkdir(skills, 0o755)
	os.WriteFile(filepath.Join(skills, "skill.md"), []byte("x"), 0o644)
	foldingStat := func(p string, st *syscall.Stat_t) error {
		err := stat(p, st)
		if err == nil {
			return nil
		}
		des, _ := os.ReadDir(filepath.Dir(p))
		for _, de := range des {
			if strings.EqualFold(de.Name(), filepath.Base(p)) {
				return stat(filepath.Join(filepath.Dir(p), de.Name()), st)
			}
		}
		return err
	}
	got, probs := privateSkills(dir, "p", nil, MaxSkillDepth, MaxSkillEntries, foldingStat)
	if want := []string{filepath.Join(skills, "SKILL.md")}; len(probs) != 0 || !slices.Equal(got, want) {
		t.Errorf("case-insensitive: skills %v, problems %v; want %v", got, probs, want)
	}
	// Case-sensitive, the same file is a single-file skill.
	got, _ = PrivateSkills(dir, "p", nil)
	if want := []string{filepath.Join(skills, "skill.md")}; !slices.Equal(got, want) {
		t.Errorf("case-sensitive: skills %v, want %v", got, want)
	}
}

// TestRealPathsForgetsLeaves: Real remembers the directories above a
// path, which sibling profiles share, but not the path itself, so that a
// check of a large tree does not hold every profile directory's path.
func TestRealPathsForgetsLeaves(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "profiles", "a")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var r RealPaths
	r.Real(dir)
	if _, ok := r.cache[dir]; ok {
		t.Errorf("Real(%s) remembered the path itself", dir)
	}
	if _, ok := r.cache[filepath.Dir(dir)]; !ok {
		t.Errorf("Real(%s) did not remember its parent", dir)
	}
}

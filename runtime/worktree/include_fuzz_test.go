package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCopyInside: whatever path git names (file names are the
// repository's, so untrusted), copyInside never panics, never writes
// outside dst, and never copies what is not a regular file of root
// reached without a symbolic link.
func FuzzCopyInside(f *testing.F) {
	for _, s := range []string{".env", "a/b/.env", "../x", "/etc/passwd", "a/../../x", "link/x", "link", "dir", "a//b", "", ".", "a/./b"} {
		f.Add(s)
	}
	base := f.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "a", "b"), filepath.Join(root, "dir"), filepath.Join(outside, "b")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(root, ".env"), filepath.Join(root, "a", "b", ".env"), filepath.Join(outside, "x")} {
		if err := os.WriteFile(p, []byte("v\n"), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		f.Fatal(err)
	}
	n := 0
	f.Fuzz(func(t *testing.T, rel string) {
		n++
		dst := filepath.Join(base, "dst", strings.Repeat("d", 1+n%3), filepath.Base(t.Name()))
		os.RemoveAll(dst)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		// The destination side has a link too: a worktree whose commit
		// tracks a symbolic link "a" must not lead a copy out of it.
		if err := os.Symlink(outside, filepath.Join(dst, "a")); err != nil {
			t.Fatal(err)
		}
		err := copyInside(root, dst, rel)
		var written []string
		filepath.WalkDir(filepath.Join(base, "dst"), func(p string, d os.DirEntry, _ error) error {
			if d != nil && !d.IsDir() && d.Type()&os.ModeSymlink == 0 {
				written = append(written, p)
			}
			return nil
		})
		var outsideFiles []string
		filepath.WalkDir(outside, func(p string, d os.DirEntry, _ error) error {
			if d != nil && !d.IsDir() {
				outsideFiles = append(outsideFiles, p)
			}
			return nil
		})
		if len(outsideFiles) != 1 {
			t.Fatalf("copyInside(%q) wrote outside: %v", rel, outsideFiles)
		}
		if err != nil {
			return
		}
		src, lerr := os.Lstat(filepath.Join(root, rel))
		if lerr != nil || !src.Mode().IsRegular() || strings.Contains(rel, "link") {
			t.Fatalf("copyInside(%q) copied what is not a regular file of root reached without a link", rel)
		}
		if strings.HasPrefix(rel, "a/") {
			t.Fatalf("copyInside(%q) copied through the destination's link", rel)
		}
		want := filepath.Join(dst, rel)
		if len(written) != 1 || written[0] != want {
			t.Fatalf("copyInside(%q) wrote %v, want only %s", rel, written, want)
		}
		os.RemoveAll(filepath.Join(base, "dst"))
	})
}

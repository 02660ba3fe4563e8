package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

func TestWriteFileAtomicRegularFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.json")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "new" || fi.Mode().Perm() != 0o644 {
		t.Errorf("got %q mode %v, want \"new\" 0644", b, fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

// TestWriteFileAtomicKeepsSymlink writes through a symlink: the link stays
// a link and its target gets the new content.
func TestWriteFileAtomicKeepsSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	link := filepath.Join(dir, "link.json")
	os.WriteFile(target, []byte("old"), 0o644)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced by a file: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("target = %q, want new", b)
	}
}

// TestWriteFileAtomicIntoFIFO stands in for `--out /dev/null` or
// /dev/stdout: a special file is written to, never renamed over.
func TestWriteFileAtomicIntoFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := WriteFileAtomic(p, []byte("manifest"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "manifest" {
		t.Errorf("reader got %q", s)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("FIFO replaced: %v %v", fi.Mode(), err)
	}
}

func TestWriteFileAtomicRefusesDirectory(t *testing.T) {
	if err := WriteFileAtomic(t.TempDir(), []byte("x"), 0o644); err == nil {
		t.Error("writing over a directory succeeded")
	}
}

// TestWriteFileInReplacesLink: a link a repository ships at the path is
// replaced by the new file; its target (here standing in for ~/.bashrc)
// is never written.
func TestWriteFileInReplacesLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "bashrc")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(root, "profile.schema.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileIn(root, link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("link target overwritten: %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link not replaced by a regular file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(link); string(b) != "new" {
		t.Errorf("file = %q, want new", b)
	}
}

// TestWriteFileInRefusesSpecialFiles: a FIFO (which an open would block
// on), a device behind nothing and a directory are refused unopened.
func TestWriteFileInRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "dir"), 0o755)
	for _, p := range []string{fifo, filepath.Join(root, "dir")} {
		var err error
		safefiletest.Within(t, func() { err = WriteFileIn(root, p, []byte("x"), 0o644) })
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want a not-regular error naming it", p, err)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("FIFO replaced: %v %v", fi, err)
	}
}

// TestWriteFileInRefusesLinkedDirectory: a directory link below root
// would carry the write out of the repository, so it is refused and
// nothing appears at its target.
func TestWriteFileInRefusesLinkedDirectory(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(root, ".pi"), 0o755)
	if err := os.Symlink(outside, filepath.Join(root, ".pi", "facets")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, ".pi", "facets", "sub", "profile.schema.json")
	for name, write := range map[string]func() error{
		"WriteFileIn": func() error { return WriteFileIn(root, p, []byte("x"), 0o644) },
		"CreateIn":    func() error { return CreateIn(root, p, []byte("x"), 0o644) },
		"MkdirIn":     func() error { return MkdirIn(root, filepath.Dir(p)) },
	} {
		if err := write(); err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("%s: err = %v, want a symlink refusal", name, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the root: %v", ents)
	}
	if err := MkdirIn(root, t.TempDir()); err == nil {
		t.Error("MkdirIn accepted a directory outside root")
	}
}

// TestCreateInRefusesLink: a new file never replaces nor follows a link.
func TestCreateInRefusesLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	link := filepath.Join(root, "a", "config.json")
	os.Mkdir(filepath.Join(root, "a"), 0o755)
	if err := os.Symlink(filepath.Join(outside, "x"), link); err != nil {
		t.Fatal(err)
	}
	if err := CreateIn(root, link, []byte("x"), 0o644); err == nil {
		t.Error("CreateIn wrote through a dangling link")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the root: %v", ents)
	}
	if err := CreateIn(root, filepath.Join(root, "b", "c", "new.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteNamedInWorkTree: compile --out into a Git work tree follows no
// link there; outside one it follows links, as WriteFileAtomic does.
func TestWriteNamedInWorkTree(t *testing.T) {
	repo, outside := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(repo, ".git"), 0o755)
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	target := filepath.Join(outside, "bashrc")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(repo, "sub", "manifest.json")
	os.Symlink(target, link)
	if err := WriteNamed(link, []byte("m"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("written through a link in a work tree: %q", b)
	}
	if b, _ := os.ReadFile(link); string(b) != "m" {
		t.Errorf("manifest = %q", b)
	}
	fifo := filepath.Join(repo, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	var err error
	safefiletest.Within(t, func() { err = WriteNamed(fifo, []byte("m"), 0o644) })
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO in a work tree: err = %v", err)
	}
	// Outside a work tree, a link is followed (dotfile managers).
	link2 := filepath.Join(outside, "link.json")
	os.Symlink(target, link2)
	if err := WriteNamed(link2, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("outside a work tree the link was not followed: %q", b)
	}
}

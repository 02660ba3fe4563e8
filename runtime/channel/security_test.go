package channel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSymlinkedChannelDirRefused(t *testing.T) {
	c := newTestChannel(t)
	real := c.Dir() + ".real"
	if err := os.Rename(c.Dir(), real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, c.Dir()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(c.Dir(), c.Manifest().Token); !errors.Is(err, ErrInsecure) {
		t.Fatalf("Open through a symlinked channel dir: %v, want ErrInsecure", err)
	}
	if _, err := Inspect(c.Dir()); !errors.Is(err, ErrInsecure) {
		t.Fatalf("Inspect through a symlinked channel dir: %v, want ErrInsecure", err)
	}
}

func TestSymlinkedInboxRefused(t *testing.T) {
	c := newTestChannel(t)
	inbox := filepath.Join(c.Dir(), "to-sub")
	elsewhere := t.TempDir() // 0700, owned by us: only the link itself is wrong
	if err := os.Remove(inbox); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, inbox); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(c.Dir(), c.Manifest().Token); !errors.Is(err, ErrInsecure) {
		t.Fatalf("Open with a symlinked inbox: %v, want ErrInsecure", err)
	}
}

func TestSymlinkedFilesRefused(t *testing.T) {
	c := newTestChannel(t)
	m := mustSend(t, c, ToSub, "genuine")
	// A symlinked message file is reported, not followed or delivered.
	target := filepath.Join(c.Dir(), "to-sub", m.ID+".json")
	link := filepath.Join(c.Dir(), "to-sub", NewID()+".json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	msgs, problems, err := c.Pending(ToSub)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || len(problems) != 1 || !errors.Is(problems[0].Err, ErrInsecure) {
		t.Fatalf("msgs %v problems %v", texts(msgs), problems)
	}
	// A symlinked counter stops the writer instead of being followed.
	counter := filepath.Join(c.Dir(), "to-sub-sequence.json")
	os.Rename(counter, counter+".real")
	if err := os.Symlink(counter+".real", counter); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ToSub, "x"); !errors.Is(err, ErrInsecure) {
		t.Fatalf("send with a symlinked counter: %v, want ErrInsecure", err)
	}
	// A symlinked manifest makes the channel unopenable.
	manifest := filepath.Join(c.Dir(), "manifest.json")
	os.Rename(manifest, manifest+".real")
	if err := os.Symlink(manifest+".real", manifest); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(c.Dir(), c.Manifest().Token); !errors.Is(err, ErrInsecure) {
		t.Fatalf("Open with a symlinked manifest: %v, want ErrInsecure", err)
	}
}

func TestGroupOrOtherBitsRefused(t *testing.T) {
	for _, rel := range []string{".", "to-main", "to-sub"} {
		for _, mode := range []os.FileMode{0o750, 0o705, 0o777} {
			c := newTestChannel(t)
			p := filepath.Join(c.Dir(), rel)
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(c.Dir(), c.Manifest().Token); !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "group/other") {
				t.Errorf("%s mode %v: %v, want ErrInsecure", rel, mode, err)
			}
		}
	}
	// An existing runtime root that others can enter is not used either.
	root := filepath.Join(t.TempDir(), "pi-facets-shared")
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o777)
	if _, err := Create(root, testManifest(NewID())); !errors.Is(err, ErrInsecure) {
		t.Fatalf("Create under a world-writable root: %v, want ErrInsecure", err)
	}
}

// TestForeignOwnerRefused chowns the channel to another uid. Only root can
// do that (and CI runs as root); without it no foreign-owned directory can
// be produced to test against.
func TestForeignOwnerRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a directory owned by another uid")
	}
	for _, rel := range []string{".", "to-sub", "manifest.json"} {
		c := newTestChannel(t)
		if err := os.Lchown(filepath.Join(c.Dir(), rel), 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(c.Dir(), c.Manifest().Token); !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "owned by uid 4242") {
			t.Errorf("%s owned by uid 4242: %v, want ErrInsecure", rel, err)
		}
	}
	c := newTestChannel(t)
	m := mustSend(t, c, ToMain, "x")
	if err := os.Lchown(filepath.Join(c.Dir(), "to-main", m.ID+".json"), 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if msgs, problems, _ := c.Pending(ToMain); len(msgs) != 0 || len(problems) != 1 || !errors.Is(problems[0].Err, ErrInsecure) {
		t.Fatalf("foreign-owned message: msgs %v problems %v", texts(msgs), problems)
	}
}

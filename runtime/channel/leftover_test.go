package channel

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSubPresence: no lock file is PresenceNone, a held lock is live (held
// by another descriptor, as by the Sub's process), a released one is
// exited; a symlink in place of the lock file is refused, not followed.
func TestSubPresence(t *testing.T) {
	c := newTestChannel(t)
	want := func(p Presence) {
		t.Helper()
		got, err := SubPresence(c.Dir())
		if err != nil || got != p {
			t.Fatalf("presence = %v, %v; want %v", got, err, p)
		}
	}
	want(PresenceNone)
	sub := reopen(t, c)
	release, err := sub.HoldPresence()
	if err != nil {
		t.Fatal(err)
	}
	want(PresenceLive)
	want(PresenceLive) // asking does not take the lock away
	release()
	want(PresenceExited)

	os.Remove(filepath.Join(c.Dir(), presenceFile))
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, nil, 0o600)
	if err := os.Symlink(target, filepath.Join(c.Dir(), presenceFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := SubPresence(c.Dir()); !errors.Is(err, ErrInsecure) {
		t.Errorf("presence through a symlink: %v, want ErrInsecure", err)
	}
	if _, err := sub.HoldPresence(); !errors.Is(err, ErrInsecure) {
		t.Errorf("hold through a symlink: %v, want ErrInsecure", err)
	}
}

// TestLockInboxesRefusesWhileAWriterHoldsOne: LockInboxes fails with
// ErrBusy while a writer holds an inbox lock, and holds the very lock a
// send takes.
func TestLockInboxesRefusesWhileAWriterHoldsOne(t *testing.T) {
	c := newTestChannel(t)
	w := reopen(t, c)
	unlock, err := w.LockInboxes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.LockInboxes(); !errors.Is(err, ErrBusy) {
		t.Errorf("second LockInboxes: %v, want ErrBusy", err)
	}
	// The lock a send takes (SendBatch's flock on the inbox) is held.
	for _, d := range []Direction{ToMain, ToSub} {
		if err := unix.Flock(int(c.inbox[d].Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
			t.Errorf("%s inbox lock: %v, want it held", d, err)
		}
	}
	unlock()
	if _, err := c.Send(ToSub, "after"); err != nil {
		t.Fatal(err)
	}
	again, err := c.LockInboxes()
	if err != nil {
		t.Fatalf("LockInboxes after the unlock: %v", err)
	}
	again()
}

// TestCopyToKeepsEveryInboxFileByteForByte: the copy holds the manifest,
// control files and every inbox file (corrupt and replayed ones too)
// exactly, not the token or the presence lock, reads as a channel, and a
// symlink in an inbox is reported, not followed.
func TestCopyToKeepsEveryInboxFileByteForByte(t *testing.T) {
	c := newTestChannel(t)
	if _, err := c.Send(ToMain, "to the Main\n\x00\xff"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ToSub, "to the Sub"); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteSession("s-1", "/sessions/s-1.jsonl"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(c.Dir(), "token"), []byte("secret\n"), 0o600)
	os.WriteFile(filepath.Join(c.Dir(), string(ToMain), "corrupt.json"), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(c.Dir(), string(ToMain), "x.json"+AsideSuffix), []byte("replayed"), 0o600)
	release, _ := reopen(t, c).HoldPresence()
	release()
	before := dirFiles(t, c.Dir())

	dest := filepath.Join(t.TempDir(), "archive")
	if err := c.CopyTo(dest); err != nil {
		t.Fatal(err)
	}
	after := dirFiles(t, dest)
	for name, data := range before {
		switch name {
		case "token", presenceFile:
			if _, ok := after[name]; ok {
				t.Errorf("%s copied", name)
			}
		default:
			if after[name] != data {
				t.Errorf("%s: copied %q, want %q", name, after[name], data)
			}
		}
	}
	if len(after) != len(before)-2 {
		t.Errorf("copied %d files, want %d", len(after), len(before)-2)
	}
	r, err := Inspect(dest)
	if err != nil || len(r.Pending[ToMain]) != 1 || len(r.Pending[ToSub]) != 1 || !slices.Contains(r.Controls, sessionName) {
		t.Errorf("inspect the copy: %+v, %v", r, err)
	}

	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("not yours"), 0o600)
	os.Symlink(secret, filepath.Join(c.Dir(), string(ToSub), "link.json"))
	dest2 := filepath.Join(t.TempDir(), "archive")
	if err := c.CopyTo(dest2); !errors.Is(err, ErrInsecure) {
		t.Errorf("copy with a symlink in the inbox: %v, want ErrInsecure", err)
	}
	if _, err := os.Lstat(filepath.Join(dest2, string(ToSub), "link.json")); !os.IsNotExist(err) {
		t.Errorf("the symlink was copied: %v", err)
	}
	if err := c.CopyTo(dest); err == nil {
		t.Errorf("CopyTo an existing directory succeeded")
	}
}

// dirFiles maps the files of a channel directory (two levels) to their contents.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			rel, _ := filepath.Rel(dir, path)
			out[rel] = string(data)
		}
		return nil
	})
	return out
}

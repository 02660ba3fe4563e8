package channel

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestMainPresence: a Main that never served has no presence; one that
// holds its lock is live; one that exited is read with its lease. Its
// folder is removed only when nothing but the presence file is left.
func TestMainPresence(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	p, _, err := MainPresence(root, "m")
	if err != nil || p != PresenceNone {
		t.Fatalf("no Main: %v %v", p, err)
	}
	lease := MainLease{SessionFile: "/s/m.jsonl"}
	release, err := HoldMainPresence(root, "m", lease)
	if err != nil {
		t.Fatal(err)
	}
	if p, _, err := MainPresence(root, "m"); err != nil || p != PresenceLive {
		t.Errorf("running Main: %v %v", p, err)
	}
	release()
	p, got, err := MainPresence(root, "m")
	if err != nil || p != PresenceExited || got != lease {
		t.Errorf("exited Main: %v %+v %v", p, got, err)
	}
	// A resumed Main rewrites its lease.
	release, err = HoldMainPresence(root, "m", MainLease{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, got, _ := MainPresence(root, "m"); got != (MainLease{Ephemeral: true}) {
		t.Errorf("rewritten lease: %+v", got)
	}
	os.Mkdir(filepath.Join(root, "m", "run-1"), 0o700)
	if ok, err := RemoveMainDir(root, "m"); ok || err != nil {
		t.Errorf("removed a Main folder with a channel in it: %v %v", ok, err)
	}
	os.Remove(filepath.Join(root, "m", "run-1"))
	if ok, err := RemoveMainDir(root, "m"); !ok || err != nil {
		t.Errorf("remove the empty Main folder: %v %v", ok, err)
	}
	if _, err := os.Stat(filepath.Join(root, "m")); !os.IsNotExist(err) {
		t.Errorf("the Main folder is still there: %v", err)
	}
	// A corrupt lease is an error naming the file, and stays on disk.
	release, _ = HoldMainPresence(root, "n", MainLease{Ephemeral: true})
	release()
	bad := filepath.Join(root, "n", mainPresenceFile)
	os.WriteFile(bad, []byte(`{"ephemeral":true,"x":1}`), 0o600)
	if _, _, err := MainPresence(root, "n"); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt lease: %v, want an error naming %s", err, bad)
	}
	if _, err := os.Stat(bad); err != nil {
		t.Errorf("the corrupt lease was removed: %v", err)
	}
}

package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// presenceFile is the Sub's presence lock: the Sub's facets serve holds a
// shared flock(2) on it for as long as it runs, so the kernel releases it
// when the Sub dies however it dies (kill -9, a reboot, its tab closed). It
// is never removed while the channel exists: a file whose lock is free says
// a Sub ran here and is gone.
const presenceFile = "sub.lock"

// Presence is what a channel's presence lock says about its Sub.
type Presence int

// The answers of SubPresence.
const (
	// PresenceNone: no Sub has held the lock yet (still starting, or a Sub
	// from before the lock existed); only the surface can tell more.
	PresenceNone Presence = iota
	// PresenceLive: a Sub process holds the lock.
	PresenceLive
	// PresenceExited: a Sub held the lock and its process has ended.
	PresenceExited
)

func (p Presence) String() string {
	switch p {
	case PresenceLive:
		return "live"
	case PresenceExited:
		return "exited"
	default:
		return "none"
	}
}

// HoldPresence takes the Sub's presence lock on c and keeps it until the
// returned function is called or the process ends.
func (c *Channel) HoldPresence() (func(), error) {
	label := filepath.Join(c.dir, presenceFile)
	fd, err := unix.Openat(int(c.root.Fd()), presenceFile, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s: symlink in place of a channel file: %w", label, ErrInsecure)
		}
		return nil, fmt.Errorf("open %s: %w", label, err)
	}
	var st unix.Stat_t
	if err := checkOpened(fd, &st, label, maxControlBytes, c.uid); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := flockRetry(fd, unix.LOCK_SH); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", label, err)
	}
	return func() { unix.Close(fd) }, nil
}

// SubPresence reads the presence lock of the channel at dir without
// waiting: it tries an exclusive lock, which fails only while a Sub holds
// its shared one. It refuses a symlinked, foreign or open channel
// directory and a presence file that is not a regular file of the user.
func SubPresence(dir string) (Presence, error) {
	root, err := openDirAt(nil, dir)
	if err != nil {
		return PresenceNone, err
	}
	defer root.Close()
	label := filepath.Join(dir, presenceFile)
	fd, err := openFileAt(root, presenceFile, label)
	if errors.Is(err, os.ErrNotExist) {
		return PresenceNone, nil
	}
	if err != nil {
		return PresenceNone, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := checkOpened(fd, &st, label, maxControlBytes, os.Geteuid()); err != nil {
		return PresenceNone, err
	}
	switch err := flockRetry(fd, unix.LOCK_EX|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		return PresenceLive, nil
	case err != nil:
		return PresenceNone, fmt.Errorf("lock %s: %w", label, err)
	}
	return PresenceExited, nil
}

func flockRetry(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// OpenOwned opens the channel at dir without its capability token, for the
// user who owns it: inspection and the release of a leftover channel.
func OpenOwned(dir string) (*Channel, error) { return openUnchecked(dir) }

// ErrBusy is returned by LockInboxes while another process writes to the
// channel.
var ErrBusy = errors.New("a writer holds the inbox lock")

// LockInboxes takes both inbox locks without waiting, the lock every
// writer holds from taking a sequence number to publishing its message, so
// no message can arrive while the caller archives and removes the channel.
// It fails with ErrBusy while a writer holds one.
func (c *Channel) LockInboxes() (func(), error) {
	var held []*os.File
	// Fd is asked at unlock time: after Close (Discard) it is -1, so a
	// descriptor number reused since is never unlocked by mistake.
	unlock := func() {
		for _, f := range held {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
		}
	}
	for _, d := range []Direction{ToMain, ToSub} {
		f := c.inbox[d]
		if err := flockRetry(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unlock()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s: %w", c.inbox[d].Name(), ErrBusy)
			}
			return nil, fmt.Errorf("lock %s: %w", c.inbox[d].Name(), err)
		}
		held = append(held, f)
	}
	return unlock, nil
}

// Unreceived counts the files waiting in either inbox: messages without a
// receipt, and the rejected, corrupt or half-written ones kept beside them.
func (c *Channel) Unreceived() (int, error) {
	n := 0
	for _, d := range []Direction{ToMain, ToSub} {
		names, err := listNames(c.inbox[d])
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", c.inbox[d].Name(), err)
		}
		n += len(names)
	}
	return n, nil
}

// CopyTo copies the channel into dest, a directory that must not exist yet,
// in the channel's own layout (so `facets channel inspect --dir DEST` reads
// it): manifest, control and sequence files, and every file of both inboxes
// byte for byte, rejected and corrupt ones included. The capability token
// and the presence lock are left out. Only regular files of the user are
// copied, none through a symlink; anything else is reported, not copied.
func (c *Channel) CopyTo(dest string) error {
	if err := os.Mkdir(dest, 0o700); err != nil {
		return fmt.Errorf("archive %s: %w", c.dir, err)
	}
	out, err := openDirAt(nil, dest)
	if err != nil {
		return fmt.Errorf("archive %s: %w", c.dir, err)
	}
	defer out.Close()
	var errs []error
	if err := copyFiles(c.root, out, c.uid, func(name string) bool {
		return name != "token" && name != presenceFile && name != string(ToMain) && name != string(ToSub)
	}); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []Direction{ToMain, ToSub} {
		if err := unix.Mkdirat(int(out.Fd()), string(d), 0o700); err != nil {
			errs = append(errs, fmt.Errorf("archive %s: mkdir %s: %w", c.dir, d, err))
			continue
		}
		sub, err := openDirAt(out, string(d))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := copyFiles(c.inbox[d], sub, c.uid, func(string) bool { return true }); err != nil {
			errs = append(errs, err)
		}
		if err := syncDir(sub, nil); err != nil {
			errs = append(errs, err)
		}
		sub.Close()
	}
	if err := syncDir(out, nil); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// copyFiles copies the regular files of from that keep accepts into to.
func copyFiles(from, to *os.File, uid int, keep func(string) bool) error {
	names, err := listNames(from)
	if err != nil {
		return fmt.Errorf("list %s: %w", from.Name(), err)
	}
	var errs []error
	for _, n := range names {
		if !keep(n) {
			continue
		}
		if err := copyFile(from, to, n, uid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func copyFile(from, to *os.File, name string, uid int) error {
	label := filepath.Join(from.Name(), name)
	fd, err := openFileAt(from, name, label)
	if err != nil {
		return err
	}
	in := os.NewFile(uintptr(fd), label)
	defer in.Close()
	var st unix.Stat_t
	if err := checkOpened(fd, &st, label, 1<<62, uid); err != nil {
		return err
	}
	dst := filepath.Join(to.Name(), name)
	ofd, err := unix.Openat(int(to.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	out := os.NewFile(uintptr(ofd), dst)
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", label, dst, err)
	}
	return nil
}

// Discard removes the channel directory whatever it still holds; the
// caller has copied what must be kept (CopyTo) and holds the inbox locks.
// The channel is closed.
func (c *Channel) Discard() error {
	dir := c.dir
	// Move the channel out of its name while the inbox locks are still
	// held: a sender waiting for a lock then finds its channel gone
	// (SendBatch checks) instead of writing into a directory being removed.
	tomb := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".removed-"+NewID()[:8])
	if err := os.Rename(dir, tomb); err != nil {
		c.Close()
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	if err := os.RemoveAll(tomb); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// CreatedByFacets reports whether the channel at dir was created by this
// runtime (it has the token file the runtime writes beside the manifest),
// not by the TypeScript Facets, which shares the runtime root and keeps no
// run records that facets could find.
func CreatedByFacets(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, "token"))
	return err == nil && fi.Mode().IsRegular()
}

// mainPresenceFile, in a Main's directory under the runtime root, is the
// Main's presence lock: its facets serve holds a shared flock(2) on it
// while the Main runs, and its content (MainLease) says whether the Main's
// session can be resumed once it has exited.
const mainPresenceFile = "main.lock"

// MainLease is what a Main's presence file says about its session.
type MainLease struct {
	// SessionFile is the Main's Pi session file; a Main resumes from it.
	SessionFile string `json:"sessionFile,omitempty"`
	// Ephemeral: the Main runs without a session file (pi --no-session),
	// so once it has exited it can never be resumed.
	Ephemeral bool `json:"ephemeral,omitempty"`
}

// HoldMainPresence takes the presence lock of the Main mainSession under
// root, writes lease into it, and keeps the lock until the returned
// function is called or the process ends. The Main's directory is created
// (0700) when missing.
func HoldMainPresence(root, mainSession string, lease MainLease) (func(), error) {
	dir, err := ensurePrivateDir(root, Safe(mainSession))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	label := filepath.Join(dir.Name(), mainPresenceFile)
	fd, err := unix.Openat(int(dir.Fd()), mainPresenceFile, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s: symlink in place of a channel file: %w", label, ErrInsecure)
		}
		return nil, fmt.Errorf("open %s: %w", label, err)
	}
	var st unix.Stat_t
	if err := checkOpened(fd, &st, label, maxControlBytes, os.Geteuid()); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := flockRetry(fd, unix.LOCK_SH); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", label, err)
	}
	data, err := encodeJSON(lease)
	if err == nil {
		err = unix.Ftruncate(fd, 0)
	}
	if err == nil {
		_, err = unix.Pwrite(fd, data, 0)
	}
	if err == nil {
		err = unix.Fsync(fd)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("write %s: %w", label, err)
	}
	return func() { unix.Close(fd) }, nil
}

// MainPresence reads the presence lock of the Main whose directory under
// root is named mainDir (Safe of its session id) without waiting, and,
// once the Main has exited, its lease. A Main from before the lock, or one
// that never served, is PresenceNone.
func MainPresence(root, mainDir string) (Presence, MainLease, error) {
	dir, err := openDirAt(nil, filepath.Join(root, mainDir))
	if errors.Is(err, os.ErrNotExist) {
		return PresenceNone, MainLease{}, nil
	}
	if err != nil {
		return PresenceNone, MainLease{}, err
	}
	defer dir.Close()
	label := filepath.Join(dir.Name(), mainPresenceFile)
	fd, err := openFileAt(dir, mainPresenceFile, label)
	if errors.Is(err, os.ErrNotExist) {
		return PresenceNone, MainLease{}, nil
	}
	if err != nil {
		return PresenceNone, MainLease{}, err
	}
	defer unix.Close(fd)
	switch err := flockRetry(fd, unix.LOCK_EX|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		return PresenceLive, MainLease{}, nil
	case err != nil:
		return PresenceNone, MainLease{}, fmt.Errorf("lock %s: %w", label, err)
	}
	data, err := readOpenedAt(fd, label, maxControlBytes, os.Geteuid())
	if err != nil {
		return PresenceNone, MainLease{}, err
	}
	lease, err := DecodeMainLease(data)
	if err != nil {
		return PresenceNone, MainLease{}, fmt.Errorf("%s: %w", label, err)
	}
	return PresenceExited, lease, nil
}

// DecodeMainLease parses a Main presence file's content: one JSON object
// with no other field than MainLease's.
func DecodeMainLease(data []byte) (MainLease, error) {
	var l MainLease
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return MainLease{}, fmt.Errorf("invalid main lease: %w", err)
	}
	if dec.More() {
		return MainLease{}, errors.New("invalid main lease: trailing data")
	}
	if l.Ephemeral && l.SessionFile != "" {
		return MainLease{}, errors.New("invalid main lease: ephemeral with a session file")
	}
	return l, nil
}

// RemoveMainDir removes the Main's directory under root when nothing but
// its presence file is left in it, and reports whether it did.
func RemoveMainDir(root, mainDir string) (bool, error) {
	dir, err := openDirAt(nil, filepath.Join(root, mainDir))
	if err != nil {
		return false, err
	}
	defer dir.Close()
	names, err := listNames(dir)
	if err != nil {
		return false, fmt.Errorf("list %s: %w", dir.Name(), err)
	}
	if len(names) != 1 || names[0] != mainPresenceFile {
		return false, nil
	}
	if err := unix.Unlinkat(int(dir.Fd()), mainPresenceFile, 0); err != nil {
		return false, fmt.Errorf("remove %s: %w", filepath.Join(dir.Name(), mainPresenceFile), err)
	}
	if err := os.Remove(dir.Name()); err != nil {
		return false, fmt.Errorf("remove %s: %w", dir.Name(), err)
	}
	return true, nil
}

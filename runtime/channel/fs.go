package channel

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrInsecure marks a channel path refused because it is a symlink, not a
// directory or regular file, owned by another user, or open to group/other.
var ErrInsecure = errors.New("insecure channel path")

// faultFunc lets tests fail a filesystem step (ENOSPC, EACCES) at a chosen
// point; production channels have none.
type faultFunc func(op, name string) error

func (f faultFunc) at(op, name string) error {
	if f == nil {
		return nil
	}
	return f(op, name)
}

// checkOwned refuses anything the current user (effective uid uid) does
// not exclusively own.
func checkOwned(st *unix.Stat_t, wantDir bool, name string, uid int) error {
	switch {
	case wantDir && st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s: not a directory: %w", name, ErrInsecure)
	case !wantDir && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("%s: not a regular file: %w", name, ErrInsecure)
	case int(st.Uid) != uid:
		return fmt.Errorf("%s: owned by uid %d, not %d: %w", name, st.Uid, uid, ErrInsecure)
	case wantDir && st.Mode&0o077 != 0:
		return fmt.Errorf("%s: mode %#o grants group/other access: %w", name, st.Mode&0o777, ErrInsecure)
	}
	return nil
}

// symlinkErr turns the ELOOP/ENOTDIR of an O_NOFOLLOW open into ErrInsecure.
func symlinkErr(name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%s: symlink or non-directory in place of a channel path: %w", name, ErrInsecure)
	}
	return fmt.Errorf("open %s: %w", name, err)
}

// openDirAt opens a directory below parent (or an absolute/relative path when
// parent is nil) without following a symlink in its last component, and
// checks ownership and mode on the opened descriptor, so a swap after the
// check cannot redirect later writes.
func openDirAt(parent *os.File, name string) (*os.File, error) {
	dirfd := unix.AT_FDCWD
	label := name
	if parent != nil {
		dirfd = int(parent.Fd())
		label = filepath.Join(parent.Name(), name)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, symlinkErr(label, err)
	}
	f := os.NewFile(uintptr(fd), label)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", label, err)
	}
	if err := checkOwned(&st, true, label, os.Geteuid()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readFileAt reads a regular file below dir, owned by uid (the effective
// uid, which a Channel keeps), without following symlinks, and refuses
// files larger than limit before reading them whole. It is on every
// scan's path, so it makes four system calls: open, fstat, one read and
// close.
func readFileAt(dir *os.File, name string, limit int64, uid int) ([]byte, error) {
	data, fd, err := readFileAtOpen(dir, name, limit, uid)
	if err != nil {
		return nil, err
	}
	unix.Close(fd)
	return data, nil
}

// readFileAtOpen is readFileAt leaving the file open when it succeeds: the
// caller closes fd, e.g. after handing a message on, so a delivery does
// not wait for the close.
func readFileAtOpen(dir *os.File, name string, limit int64, uid int) (data []byte, fd int, err error) {
	label := filepath.Join(dir.Name(), name)
	fd, err = openFileAt(dir, name, label)
	if err != nil {
		return nil, -1, err
	}
	data, err = readOpenedAt(fd, label, limit, uid)
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	return data, fd, nil
}

// readOpenedAt is readFileAtOpen once fd is open.
func readOpenedAt(fd int, label string, limit int64, uid int) ([]byte, error) {
	var st unix.Stat_t
	if err := checkOpened(fd, &st, label, limit, uid); err != nil {
		return nil, err
	}
	// Sized to the file plus one byte, one read takes a file that did not
	// grow; a regular file reads short only at its end.
	buf := make([]byte, 0, st.Size+1)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				break
			}
			buf = slices.Grow(buf, int(min(int64(len(buf)), limit+1-int64(len(buf)))))
		}
		want := cap(buf) - len(buf)
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", label, err)
		}
		buf = buf[:len(buf)+n]
		if n < want {
			break
		}
	}
	if int64(len(buf)) > limit {
		return nil, fmt.Errorf("%s: grew beyond the %d byte limit while reading", label, limit)
	}
	return buf, nil
}

// openFileAt opens name below dir for reading without following a
// symlink (or blocking on a FIFO).
func openFileAt(dir *os.File, name, label string) (int, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, fmt.Errorf("open %s: %w", label, os.ErrNotExist)
		}
		if errors.Is(err, unix.ELOOP) {
			return -1, fmt.Errorf("%s: symlink in place of a channel file: %w", label, ErrInsecure)
		}
		return -1, fmt.Errorf("open %s: %w", label, err)
	}
	return fd, nil
}

// openReadAt is readFileAt returning the open file and its stat too, so a
// caller can tell exactly which version of the file it read.
func openReadAt(dir *os.File, name string, limit int64, uid int) (*os.File, unix.Stat_t, []byte, error) {
	var st unix.Stat_t
	label := filepath.Join(dir.Name(), name)
	fd, err := openFileAt(dir, name, label)
	if err != nil {
		return nil, st, nil, err
	}
	f := os.NewFile(uintptr(fd), label)
	data, err := readOpened(f, &st, label, limit, uid)
	if err != nil {
		f.Close()
		return nil, st, nil, err
	}
	return f, st, data, nil
}

// checkOpened stats an opened file and refuses it unless it is a regular
// file owned by uid within limit.
func checkOpened(fd int, st *unix.Stat_t, label string, limit int64, uid int) error {
	if err := unix.Fstat(fd, st); err != nil {
		return fmt.Errorf("stat %s: %w", label, err)
	}
	if err := checkOwned(st, false, label, uid); err != nil {
		return err
	}
	if st.Size > limit {
		return fmt.Errorf("%s: %d bytes exceeds the %d byte limit", label, st.Size, limit)
	}
	return nil
}

func readOpened(f *os.File, st *unix.Stat_t, label string, limit int64, uid int) ([]byte, error) {
	if err := checkOpened(int(f.Fd()), st, label, limit, uid); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", label, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: grew beyond the %d byte limit while reading", label, limit)
	}
	return data, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read never returns an error on supported platforms.
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewID returns a random UUID v4, the form of run and message ids.
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func tokenEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// tempName is <file>.<pid>.<12 hex>.tmp, the temp-name pattern both
// implementations sweep. Readers only look at names ending in .json, so a
// temp file left by a crash is inert.
func tempName(name string, pid int) string {
	return name + "." + strconv.Itoa(pid) + "." + randomHex(6) + ".tmp"
}

// pendingFile is a written but not yet published temp file.
type pendingFile struct {
	tmp, name string
}

// createTemp writes data to a fresh temp file in dir and fsyncs it; pid is
// the process id its name carries. It never creates directories: a removed
// channel makes it fail with ENOENT. It works on the bare descriptor, as
// an os.File would cost a system call more per message.
func createTemp(dir *os.File, name string, data []byte, pid int, fault faultFunc) (pendingFile, error) {
	tmp := tempName(name, pid)
	label := filepath.Join(dir.Name(), tmp)
	if err := fault.at("create", name); err != nil {
		return pendingFile{}, fmt.Errorf("create %s: %w", label, err)
	}
	fd, err := unix.Openat(int(dir.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return pendingFile{}, fmt.Errorf("create %s: %w", label, err)
	}
	p := pendingFile{tmp: tmp, name: name}
	op := "write"
	err = fault.at("write", name)
	if err == nil {
		err = writeAll(fd, data)
	}
	if err == nil {
		op = "sync"
		if err = fault.at("sync", name); err == nil {
			err = ignoringEINTR(func() error { return unix.Fsync(fd) })
		}
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		op, err = "close", cerr
	}
	if err != nil {
		_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
		return pendingFile{}, fmt.Errorf("%s %s: %w", op, label, err)
	}
	return p, nil
}

// writeAll writes data to fd, retrying short writes and EINTR.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// publish renames a synced temp file over its final name.
func publish(dir *os.File, p pendingFile, fault faultFunc) error {
	err := fault.at("rename", p.name)
	if err == nil {
		err = unix.Renameat(int(dir.Fd()), p.tmp, int(dir.Fd()), p.name)
	}
	if err != nil {
		_ = unix.Unlinkat(int(dir.Fd()), p.tmp, 0)
		return fmt.Errorf("rename %s into place: %w", filepath.Join(dir.Name(), p.name), err)
	}
	return nil
}

// syncDir makes renames and unlinks in dir durable.
func syncDir(dir *os.File, fault faultFunc) error {
	err := fault.at("sync-dir", dir.Name())
	if err == nil {
		err = dir.Sync()
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir.Name(), err)
	}
	return nil
}

// writeAtomic is temp file + fsync + rename + directory fsync.
func writeAtomic(dir *os.File, name string, data []byte, fault faultFunc) error {
	p, err := createTemp(dir, name, data, os.Getpid(), fault)
	if err != nil {
		return err
	}
	if err := publish(dir, p, fault); err != nil {
		return err
	}
	return syncDir(dir, fault)
}

// Package safefile reads files that come from outside facets (settings,
// profiles, roles, token files, state records) one way: only regular files,
// never blocking on a FIFO or device, and never reading more than a cap.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file (a directory, FIFO, socket or device).
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is a file larger than the caller's limit. Size is -1 when
// the file grew past the limit while it was read.
type TooLargeError struct {
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("larger than the %d byte limit", e.Limit)
	}
	return fmt.Sprintf("%d bytes exceeds the %d byte limit", e.Size, e.Limit)
}

// ReadFile returns the contents of the regular file at path (symlinks
// followed) if it holds at most limit bytes. Every error is an
// *fs.PathError naming path; a missing file satisfies
// errors.Is(err, fs.ErrNotExist), a special file errors.Is(err,
// ErrNotRegular) and an oversized one errors.As(err, **TooLargeError).
func ReadFile(path string, limit int64) ([]byte, error) {
	return read(path, limit, false)
}

// ErrNotPrivate is wrapped by ReadPrivate's error for a file that another
// user owns or that group or others may access.
var ErrNotPrivate = errors.New("not a private file")

// ReadPrivate is ReadFile for secrets such as a capability token: the file
// must also be owned by the current user, closed to group and others
// (0600 or stricter) and not a symlink, as the channel directories must be.
func ReadPrivate(path string, limit int64) ([]byte, error) {
	return read(path, limit, true)
}

func read(path string, limit int64, private bool) ([]byte, error) {
	fail := func(op string, err error) ([]byte, error) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: op, Path: path, Err: err}
	}
	// Stat first so that a device or FIFO is refused without being opened
	// at all; the fstat below closes the race with a swap after this check.
	stat, flags := os.Stat, os.O_RDONLY|syscall.O_NONBLOCK
	if private {
		stat, flags = os.Lstat, flags|syscall.O_NOFOLLOW
	}
	if fi, err := stat(path); err != nil {
		return fail("open", err) // as a plain open would say
	} else if !fi.Mode().IsRegular() {
		return fail("read", notRegular(fi.Mode()))
	}
	// O_NONBLOCK: should the path have become a FIFO since the stat, the
	// open returns at once instead of waiting for a writer. It has no
	// effect on reads of regular files.
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return fail("open", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail("stat", err)
	}
	if !fi.Mode().IsRegular() {
		return fail("read", notRegular(fi.Mode()))
	}
	if private {
		if err := checkPrivate(fi); err != nil {
			return fail("read", err)
		}
	}
	if fi.Size() > limit {
		return fail("read", &TooLargeError{Size: fi.Size(), Limit: limit})
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return fail("read", err)
	}
	if int64(len(b)) > limit {
		return fail("read", &TooLargeError{Size: -1, Limit: limit})
	}
	return b, nil
}

func checkPrivate(fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%w: owned by uid %d, not by uid %d; recreate it as your own 0600 file", ErrNotPrivate, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: mode %04o lets other users read it; chmod 600 it", ErrNotPrivate, perm)
	}
	return nil
}

func notRegular(m fs.FileMode) error {
	return fmt.Errorf("%w (%s)", ErrNotRegular, Kind(m))
}

// Kind names the type of a non-regular file for messages ("a named pipe").
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return m.Type().String()
}

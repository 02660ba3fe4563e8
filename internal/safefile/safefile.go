// Package safefile reads files that come from outside facets (settings,
// profiles, roles, token files, state records) one way: only regular files,
// never blocking on a FIFO or device, and never reading more than a cap;
// and writes facets' own files atomically.
package safefile

import (
	"errors"
	"fmt"
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
	// The system call fills a Stat_t on the stack: os.Stat would allocate
	// a FileInfo per file, and discovery reads thousands.
	// (Calling either directly, not through a func variable, keeps st off
	// the heap.)
	var st syscall.Stat_t
	if _, err := retry(func() (int, error) {
		if private {
			return 0, syscall.Lstat(path, &st)
		}
		return 0, syscall.Stat(path, &st)
	}); err != nil {
		return fail("open", err) // as a plain open would say
	} else if mode := ModeOf(&st); !mode.IsRegular() {
		return fail("read", notRegular(mode))
	}
	// O_NONBLOCK: should the path have become a FIFO since the stat, the
	// open returns at once instead of waiting for a writer. It has no
	// effect on reads of regular files. The file is read with plain system
	// calls, not an os.File: os.Open registers every file with Go's network
	// poller, which for a regular file costs two failing system calls, and
	// discovery reads thousands of files.
	flags := syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if private {
		flags |= syscall.O_NOFOLLOW
	}
	fd, err := retry(func() (int, error) { return syscall.Open(path, flags, 0) })
	if err != nil {
		return fail("open", err)
	}
	defer syscall.Close(fd)
	if _, err := retry(func() (int, error) { return 0, syscall.Fstat(fd, &st) }); err != nil {
		return fail("stat", err)
	}
	mode := ModeOf(&st)
	if !mode.IsRegular() {
		return fail("read", notRegular(mode))
	}
	if private {
		if err := checkPrivate(int(st.Uid), mode.Perm()); err != nil {
			return fail("read", err)
		}
	}
	if st.Size > limit {
		return fail("read", &TooLargeError{Size: st.Size, Limit: limit})
	}
	b, err := readAll(fd, st.Size, limit)
	if err != nil {
		return fail("read", err)
	}
	if int64(len(b)) > limit {
		return fail("read", &TooLargeError{Size: -1, Limit: limit})
	}
	return b, nil
}

// retry repeats a system call interrupted by a signal.
func retry(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// readAll reads the size bytes fstat reported, or to the end when it
// reported none (as procfs files do), but never more than limit+1 bytes,
// so a caller sees that a file over the limit is over it without reading
// all of it. Stopping at size spares each file a second read that only
// finds the end; what the file held when it was stat'ed is also what a
// reader racing a writer may get anyway.
func readAll(fd int, size, limit int64) ([]byte, error) {
	buf := make([]byte, 0, max(0, min(size, limit))+1)
	for int64(len(buf)) <= limit && (size <= 0 || int64(len(buf)) < size) {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(int64(cap(buf)), limit+1)
		n, err := retry(func() (int, error) { return syscall.Read(fd, buf[len(buf):end]) })
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

// ModeOf is the type and permission bits of st as an fs.FileMode, as
// os.Stat gives them; st.Mode is a uint32 on Linux and a uint16 on macOS.
func ModeOf(st *syscall.Stat_t) fs.FileMode {
	m := uint32(st.Mode)
	mode := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	}
	return mode
}

func checkPrivate(uid int, perm fs.FileMode) error {
	if uid != os.Getuid() {
		return fmt.Errorf("%w: owned by uid %d, not by uid %d; recreate it as your own 0600 file", ErrNotPrivate, uid, os.Getuid())
	}
	if perm&0o077 != 0 {
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

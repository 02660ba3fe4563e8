package profiles

import (
	"io/fs"
	"syscall"
)

// rawFile is a file opened for one read, bypassing os.File: os.Open
// registers every file with Go's network poller, which for a regular file
// costs two failing system calls, and discovery opens thousands.
type rawFile struct {
	fd   int
	path string
}

// openRaw opens path read-only and non-blocking, so a FIFO or device in
// place of a file cannot hang discovery. Errors are *fs.PathError, as from
// os.Open.
func openRaw(path string) (rawFile, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return rawFile{fd: -1}, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return rawFile{fd: fd, path: path}, nil
	}
}

func (f rawFile) Close() { syscall.Close(f.fd) }

// stat reports whether the file is a regular file, and its size.
func (f rawFile) stat() (regular bool, size int64, err error) {
	var st syscall.Stat_t
	for {
		err = syscall.Fstat(f.fd, &st)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return false, 0, &fs.PathError{Op: "stat", Path: f.path, Err: err}
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFREG, st.Size, nil
}

// readAll reads to the end, but never more than limit+1 bytes, so a caller
// sees that a file over the limit is over it without reading all of it.
// size (from stat) sizes the buffer: usually one read fills it and a
// second finds the end.
func (f rawFile) readAll(size, limit int64) ([]byte, error) {
	buf := make([]byte, 0, max(0, min(size, limit))+1)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(int64(cap(buf)), limit+1)
		n, err := syscall.Read(f.fd, buf[len(buf):end])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: f.path, Err: err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

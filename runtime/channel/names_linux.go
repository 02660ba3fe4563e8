//go:build linux

package channel

import (
	"errors"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// listNames returns the sorted entry names of dir, read through a fresh
// descriptor (so concurrent listings never share an offset) with bare
// getdents calls: an os.File costs a system call more per scan.
func listNames(dir *os.File) ([]string, error) {
	fd, err := unix.Openat(int(dir.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 8192)
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "readdirent", Path: dir.Name(), Err: err}
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	sort.Strings(names)
	return names, nil
}

//go:build !linux

package channel

import (
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// listNames returns the sorted entry names of dir, read through a fresh
// descriptor so concurrent listings never share an offset (Linux lists
// with bare getdents instead, names_linux.go).
func listNames(dir *os.File) ([]string, error) {
	fd, err := unix.Openat(int(dir.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), dir.Name())
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

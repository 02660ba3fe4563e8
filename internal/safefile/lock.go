package safefile

import (
	"errors"
	"os"
	"syscall"
)

// LockExclusive waits for an exclusive flock(2) on f, retrying when a
// signal interrupts the wait (Go's runtime signals do, under load).
func LockExclusive(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

package herdr

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// openTerminal opens a pseudo-terminal pair of rows×cols (what
// portable_pty's openpty gives Herdr's harness): the master for this
// process, the slave for the server.
func openTerminal(rows, cols uint16) (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNoTerminal, err)
	}
	fail := func(err error) (*os.File, *os.File, error) {
		master.Close()
		return nil, nil, fmt.Errorf("%w: %v", errNoTerminal, err)
	}
	var unlock int32
	if err := ioctl(master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); err != nil {
		return fail(err)
	}
	var n uint32
	if err := ioctl(master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); err != nil {
		return fail(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return fail(err)
	}
	size := struct{ rows, cols, x, y uint16 }{rows, cols, 0, 0}
	if err := ioctl(slave.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&size))); err != nil {
		slave.Close()
		return fail(err)
	}
	return master, slave, nil
}

func ioctl(fd, req, arg uintptr) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, req, arg); e != 0 {
		return e
	}
	return nil
}

//go:build linux

package pibridge

import "golang.org/x/sys/unix"

// peerUID is the user id of the process at the other end of a Unix socket
// connection with descriptor fd, as the kernel recorded it at connect.
func peerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}

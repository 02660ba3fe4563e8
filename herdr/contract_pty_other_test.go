//go:build !linux

package herdr

import "os"

// openTerminal has no implementation here: the server runs detached.
func openTerminal(rows, cols uint16) (master, slave *os.File, err error) {
	return nil, nil, errNoTerminal
}

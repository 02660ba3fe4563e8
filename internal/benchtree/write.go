//go:build ignore

// write.go writes the benchmark tree:
//
//	go run internal/benchtree/write.go DIR N
//
// It carries the ignore build tag so that `go install ./...` (which
// pre-commit's golang hooks run) installs facets alone.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/facets-dev/facets/internal/benchtree"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: benchtree DIR N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "benchtree: N must be a positive number")
		os.Exit(2)
	}
	if err := benchtree.Write(os.Args[1], n); err != nil {
		fmt.Fprintln(os.Stderr, "benchtree:", err)
		os.Exit(1)
	}
}

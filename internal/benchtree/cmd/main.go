// Command cmd writes the benchmark tree: go run ./internal/benchtree/cmd DIR N.
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

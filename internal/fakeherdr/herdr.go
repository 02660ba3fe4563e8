//go:build ignore

// herdr.go is the fake herdr (package fakeherdr) as a standalone
// executable, for trying it by hand; build it outside the repository:
// go build -o "$(mktemp -d)/herdr" internal/fakeherdr/herdr.go. Tests do
// not build it: internal/herdrtest runs the test binary itself as herdr.
// It carries the ignore build tag so that `go install ./...` (which
// pre-commit's golang hooks run) never puts a fake herdr on anyone's PATH.
package main

import (
	"os"

	"github.com/facets-dev/facets/internal/fakeherdr"
)

func main() { os.Exit(fakeherdr.Main(os.Args[1:], os.Stdout, os.Stderr)) }

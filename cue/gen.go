//go:build ignore

// gen.go writes the generated fast validators (fastvalidate_gen.go) from
// schema/*.cue; go generate ./cue runs it. It carries the ignore build tag
// so that `go install ./...` (which pre-commit's golang hooks run) installs
// facets alone; the work is internal/fastgen.WriteFile, which is vetted.
package main

import (
	"fmt"
	"os"

	"github.com/facets-dev/facets/cue/internal/fastgen"
)

func main() {
	if err := fastgen.WriteFile("."); err != nil {
		fmt.Fprintln(os.Stderr, "fastgen:", err)
		os.Exit(1)
	}
}

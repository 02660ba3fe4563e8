// Command cmd writes package cue's generated fast validators
// (fastvalidate_gen.go) from the schema/*.cue files in the current
// directory; go generate ./cue runs it.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/facets-dev/facets/cue/internal/fastgen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fastgen:", err)
		os.Exit(1)
	}
}

func run() error {
	paths, err := filepath.Glob(filepath.Join("schema", "*.cue"))
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read schema: %w", err)
		}
		files[filepath.Base(p)] = b
	}
	src, err := fastgen.Generate(files)
	if err != nil {
		return err
	}
	return os.WriteFile("fastvalidate_gen.go", src, 0o644)
}

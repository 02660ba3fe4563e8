package fastgen

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile generates the validators for the schema/*.cue files under dir
// (package cue's directory) and writes them to dir/fastvalidate_gen.go;
// go generate ./cue runs it through cue/gen.go.
func WriteFile(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "schema", "*.cue"))
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
	src, err := Generate(files)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "fastvalidate_gen.go"), src, 0o644)
}

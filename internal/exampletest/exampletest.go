// Package exampletest compiles the repository's example tree
// (testdata/example) for tests of the layers that consume a manifest.
package exampletest

import (
	"path/filepath"
	"testing"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/profiles"
)

// Manifest compiles the example tree at dir from its project/service
// directory, the tree `facets compile` is documented with, with agent/ as
// Pi's agent dir and the project trusted or not.
func Manifest(tb testing.TB, dir string, trusted bool) *manifest.Manifest {
	tb.Helper()
	example, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	getenv := func(k string) string {
		if k == envvar.AgentDir {
			return filepath.Join(example, "agent")
		}
		return ""
	}
	env, err := profiles.NewEnv(getenv, tb.TempDir(), filepath.Join(example, "project", "service"))
	if err != nil {
		tb.Fatal(err)
	}
	schema, err := cue.Load()
	if err != nil {
		tb.Fatal(err)
	}
	m, _, err := compiler.Compile(schema, compiler.Options{Env: env, TrustFlag: &trusted})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

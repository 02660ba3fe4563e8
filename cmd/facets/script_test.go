package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/facets-dev/facets/internal/golden"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"facets": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script against the
// facets binary. FACETS_UPDATE=1 (see internal/golden) rewrites their
// expected output.
func TestScripts(t *testing.T) {
	example, err := filepath.Abs("../../testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       golden.Update(),
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLE", example)
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("PI_CODING_AGENT_DIR", filepath.Join(env.WorkDir, "agent"))
			env.Setenv("FACETS_ROLE_PACKS", "")
			return nil
		},
	})
}

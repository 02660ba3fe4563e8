package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/facets-dev/facets/internal/golden"
	"github.com/facets-dev/facets/internal/herdrtest"
)

func TestMain(m *testing.M) {
	commands := herdrtest.Commands() // "herdr": the fake
	commands["facets"] = func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
	testscript.Main(cleanupM{m}, commands)
}

// cleanupM removes the fake herdr's -race build once the tests have run
// (testscript.Main exits on its own).
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	defer herdrtest.Cleanup()
	return c.m.Run()
}

// TestScripts runs the end-to-end scripts in testdata/script against the
// facets binary, with the fake herdr (internal/fakeherdr) first on PATH and
// a Herdr pane's environment, so scripts can run the Sub commands and look
// at the fake with `exec herdr …`. FACETS_UPDATE=1 (see internal/golden)
// rewrites their
// expected output.
func TestScripts(t *testing.T) {
	example, err := filepath.Abs("../../testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	herdrBin := herdrtest.Binary(t)
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
			// A Herdr pane: the fake's state lives in $HERDR_STATE.
			state := filepath.Join(env.WorkDir, ".herdr")
			if err := os.MkdirAll(state, 0o700); err != nil {
				return err
			}
			env.Setenv("PATH", herdrBin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("FAKEHERDR_STATE", state)
			env.Setenv("HERDR_STATE", state)
			env.Setenv("HERDR_ENV", "1")
			env.Setenv("HERDR_WORKSPACE_ID", "w1")
			env.Setenv("HERDR_SOCKET_PATH", filepath.Join(state, "herdr.sock"))
			env.Setenv("HERDR_BIN_PATH", "")
			env.Setenv("FACETS_HERDR", "")
			env.Setenv("PI_FACETS_MAIN_SESSION", "main-1")
			// delegate refuses a --bridge that is not a file; the fake herdr
			// never runs it, so an empty file stands in for the extension.
			bridge := filepath.Join(env.WorkDir, ".bridge.ts")
			if err := os.WriteFile(bridge, nil, 0o600); err != nil {
				return err
			}
			env.Setenv("FACETS_PI_BRIDGE", bridge)
			env.Setenv("FACETS_STATE_DIR", filepath.Join(env.WorkDir, ".state"))
			env.Setenv("XDG_RUNTIME_DIR", filepath.Join(env.WorkDir, ".xdg"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"setjson": setJSON,
		},
	})
}

// setJSON is `setjson VAR KEY`: it sets $VAR to the string KEY of the JSON
// object the last command printed (a --format json result), so a script
// can pass a run id on.
func setJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: setjson VAR KEY")
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &obj); err != nil {
		ts.Fatalf("stdout is not a JSON object: %v", err)
	}
	v, ok := obj[args[1]].(string)
	if !ok || v == "" {
		ts.Fatalf("stdout has no string %q", args[1])
	}
	ts.Setenv(args[0], v)
}

package main

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
)

// runApp runs the CLI in process with env as its whole environment, also
// for the herdr it starts, so tests need no t.Setenv and can run in
// parallel.
func runApp(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	environ := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		environ = append(environ, k+"="+env[k])
	}
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }, environ: environ}
	code := a.run(args)
	return code, out.String(), errb.String()
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"
)

func TestHerdrVisibilityUsage(t *testing.T) {
	for _, args := range [][]string{
		{"herdr-visibility"},
		{"herdr-visibility", "flip"},
		{"herdr-visibility", "hide", "show"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(args, strings.NewReader(""), &stdout, &stderr)
		// The arguments must be refused before any Herdr variable is read.
		if code != exitUsage || !strings.Contains(stderr.String(), "arg") || strings.Contains(stderr.String(), "HERDR_") {
			t.Errorf("%v: exit %d, stderr %q; want %d and an argument error", args, code, stderr.String(), exitUsage)
		}
	}
}

func TestHerdrVisibilityNeedsHerdrPluginEnv(t *testing.T) {
	t.Parallel()
	code, _, stderr := runApp(t, map[string]string{envvar.HerdrPluginStateDir: t.TempDir()}, "", "herdr-visibility", "hide")
	if code != exitFailure || !strings.Contains(stderr, "HERDR_SOCKET_PATH") {
		t.Errorf("exit %d, stderr %q; want %d naming HERDR_SOCKET_PATH", code, stderr, exitFailure)
	}
}

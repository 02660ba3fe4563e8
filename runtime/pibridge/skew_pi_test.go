package pibridge_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/launch"
	"github.com/facets-dev/facets/runtime/pibridge"
)

// skewCase is one side of a version skew: the bridge Pi loads and the
// environment that picks the facets binary it runs.
type skewCase struct {
	bridge string
	env    []string
	// want are the parts of the mismatch message: both versions and the fix.
	want []string
	// once is the phrase the message holds once (the warning is not repeated).
	once string
	// unreachable: no facets can run, so a Sub cannot tell its Main.
	unreachable bool
}

// olderExtension installs the extension as it was before the handshake
// (testdata/extension-protocol1 is index.ts of commit 06601e4) beside a
// facets-bridge.json naming the current binary, as an upgrade of the binary
// without `facets pi-extension install` leaves it.
func olderExtension(t *testing.T, e *piEnv) skewCase {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "extension-protocol1", "index.ts"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "old-bridge")
	writeFile(t, filepath.Join(dir, "index.ts"), string(src))
	writeJSON(t, filepath.Join(dir, pibridge.ConfigFile), map[string]any{"facetsBin": e.facets})
	return skewCase{bridge: filepath.Join(dir, "index.ts"), want: []string{
		"The facets Pi extension (protocol 1, installed before the version handshake) does not match the facets binary (protocol " +
			strconv.Itoa(pibridge.Protocol) + ", facets ",
		" at " + e.facets + ")", "Run `facets pi-extension install`"}, once: "does not match"}
}

// olderBinary is the current extension with a stand-in for a facets from
// before the handshake: it rejects --protocol as such a binary's flag
// parser does, reports an old --version and otherwise is the current one.
func olderBinary(t *testing.T, e *piEnv) skewCase {
	t.Helper()
	standIn := filepath.Join(t.TempDir(), "facets")
	writeFile(t, standIn, "#!/bin/sh\n# facets 0.0.9: no version handshake\n"+
		"for a; do case \"$a\" in --protocol|--extension-version) echo \"facets: unknown flag: $a\" >&2; exit 2;; esac; done\n"+
		"if [ \"$1\" = --version ]; then echo 'facets version 0.0.9'; exit 0; fi\n"+
		"exec "+strconv.Quote(e.facets)+" \"$@\"\n")
	if err := os.Chmod(standIn, 0o755); err != nil {
		t.Fatal(err)
	}
	return skewCase{bridge: e.bridge, env: []string{"FACETS_BIN=" + standIn}, want: []string{
		"The facets Pi extension (protocol " + strconv.Itoa(pibridge.Protocol) + ", installed by facets " + testExtensionVersion +
			") does not match the facets binary (protocol 1, facets 0.0.9 at " + standIn + ")",
		"Run `facets pi-extension install`"}, once: "does not match"}
}

// missingBinary is the current extension whose facets is gone (moved or
// uninstalled, the extension left in place): plain Pi must still start.
func missingBinary(t *testing.T, e *piEnv) skewCase {
	gone := filepath.Join(t.TempDir(), "gone", "facets")
	return skewCase{bridge: e.bridge, env: []string{"FACETS_BIN=" + gone}, want: []string{
		"The facets Pi extension cannot start facets (cannot run " + gone + ": Error: spawn " + gone + " ENOENT)",
		"Run `facets pi-extension install`", "remove the facets extension to use Pi without Facets"},
		once: "cannot start facets", unreachable: true}
}

// TestVersionSkewWithRealPi runs real Pi with an extension and a binary of
// different protocols, in both directions: `pi --profile` stops with exit
// 1 and a message naming both versions and the fix; plain `pi` warns once
// and runs without Facets (no Facets tools or prompt sections reach the
// model); a Sub fails to start and tells its Main why.
func TestVersionSkewWithRealPi(t *testing.T) {
	for _, tc := range []struct {
		name string
		skew func(*testing.T, *piEnv) skewCase
	}{
		{"older extension", olderExtension},
		{"older binary", olderBinary},
		{"missing binary", missingBinary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "plain pi answer"} })
			e := newPiEnv(t, mock)
			e.profile("worker", map[string]any{"description": "Works", "tools": []string{"read"}})
			sk := tc.skew(t, e)
			hasAll := func(s string) bool {
				for _, w := range sk.want {
					if !strings.Contains(s, w) {
						return false
					}
				}
				return true
			}

			_, stderr, code := e.runExit(sk.env, "--no-extensions", "-e", sk.bridge, "--no-session", "--profile", "worker", "-p", "hello")
			if code != 1 || !hasAll(stderr) || strings.Count(stderr, sk.once) != 1 {
				t.Errorf("pi --profile: exit status %d, stderr %q; want 1 and one message with %q", code, stderr, sk.want)
			}
			if n := len(mock.Requests()); n != 0 {
				t.Errorf("pi --profile with a version skew made %d model requests", n)
			}

			stdout, stderr, code := e.runExit(sk.env, "--no-extensions", "-e", sk.bridge, "--no-session", "-p", "hello")
			if code != 0 || !strings.Contains(stdout, "plain pi answer") || !hasAll(stderr) || strings.Count(stderr, sk.once) != 1 {
				t.Errorf("plain pi: exit status %d, stdout %q, stderr %q; want 0, the model's answer and one warning with %q", code, stdout, stderr, sk.want)
			}
			if reqs := mock.Requests(); len(reqs) == 1 {
				for _, tool := range reqs[0].toolNames() {
					if tool == "delegate" || tool == "list_sub" {
						t.Errorf("plain pi with a version skew offers Facets tool %s", tool)
					}
				}
				if strings.Contains(reqs[0].system(), "<facets_") {
					t.Errorf("plain pi with a version skew has Facets prompt sections:\n%s", reqs[0].system())
				}
			} else {
				t.Errorf("plain pi made %d model requests, want 1", len(reqs))
			}

			p := manifest.Profile{Name: "worker", Scope: "global", SourcePath: "/x/worker/config.json", Launch: manifest.Launch{
				Model: "mock/mock-model", Tools: []string{"read"}, Skills: []string{}, Extensions: []string{}, SessionPersistence: "ephemeral", Invocation: "both"}}
			ch := newSubChannel(t, e, p, "task")
			args := launch.Spec{Profile: p, Bridge: sk.bridge, Title: "Skewed"}.Args()
			before := len(mock.Requests())
			if _, stderr, code := e.runExit(append(e.subEnv(ch), sk.env...), append(args, "-p", "task")...); code != 1 || !hasAll(stderr) {
				t.Errorf("Sub: exit status %d, stderr %q; want 1 and %q", code, stderr, sk.want)
			}
			msgs, _, err := ch.Pending(channel.ToMain)
			if sk.unreachable {
				// Without a facets nothing can write the channel; the Sub
				// still exits 1 (above), which ends its tab.
				if err != nil || len(msgs) != 0 {
					t.Errorf("to-main = %+v (%v), want nothing: no facets could have sent it", msgs, err)
				}
			} else if err != nil || len(msgs) != 1 || !strings.HasPrefix(msgs[0].Text, "Unable to initialize Sub profile: ") || !hasAll(msgs[0].Text) {
				t.Errorf("the Main was not told why the Sub did not start: to-main = %+v (%v)", msgs, err)
			}
			if n := len(mock.Requests()) - before; n != 0 {
				t.Errorf("a skewed Sub made %d model requests", n)
			}
		})
	}
}

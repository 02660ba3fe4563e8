package pibridge_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/facets-dev/facets/runtime/pibridge"
)

// TestExtensionSpeaksProtocol: index.ts's PROTOCOL is pibridge.Protocol, so
// an extension installed by this binary matches it.
func TestExtensionSpeaksProtocol(t *testing.T) {
	source, err := os.ReadFile("extension/index.ts") // the file pibridge embeds
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const PROTOCOL = (\d+);$`).FindSubmatch(source)
	if m == nil || string(m[1]) != strconv.Itoa(pibridge.Protocol) {
		t.Fatalf("index.ts PROTOCOL = %q, want %d", m, pibridge.Protocol)
	}
}

func TestMismatch(t *testing.T) {
	bin := pibridge.Peer{Protocol: pibridge.Protocol, Version: "1.2.0", Path: "/usr/bin/facets"}
	if msg := pibridge.Mismatch(pibridge.Peer{Protocol: pibridge.Protocol, Version: "1.0.0"}, bin); msg != "" {
		t.Errorf("same protocol, other build: %q, want no mismatch", msg)
	}
	for _, tc := range []struct {
		ext  pibridge.Peer
		want string
	}{
		{pibridge.Peer{Protocol: 1}, "The facets Pi extension (protocol 1, installed before the version handshake) does not match the facets binary (protocol " +
			strconv.Itoa(pibridge.Protocol) + ", facets 1.2.0 at /usr/bin/facets). Run `facets pi-extension install` with the facets you want Pi to use, then restart Pi."},
		{pibridge.Peer{Protocol: pibridge.Protocol + 1, Version: "2.0.0"}, "(protocol " + strconv.Itoa(pibridge.Protocol+1) + ", installed by facets 2.0.0)"},
		{pibridge.Peer{Protocol: pibridge.Protocol + 1}, "installed by facets unknown version"},
	} {
		if got := pibridge.Mismatch(tc.ext, bin); !strings.Contains(got, tc.want) || strings.Contains(got, "\n") {
			t.Errorf("Mismatch(%+v) = %q, want one line with %q", tc.ext, got, tc.want)
		}
	}
}

// TestMismatchPlan: a skewed Main with a profile and a Sub get an Error
// (every extension ends such a start with exit 1); a plain Main gets one
// warning, no tools, no commands and the Facets sections deleted.
func TestMismatchPlan(t *testing.T) {
	for _, tc := range []struct{ role, profile string }{{"main", "worker"}, {"sub", ""}} {
		p := pibridge.MismatchPlan(tc.role, tc.profile, "skew")
		if p.Error != "skew" || p.Mismatch != "skew" || len(p.Tools) > 0 || p.Protocol != pibridge.Protocol {
			t.Errorf("%s %q: %+v, want the error", tc.role, tc.profile, p)
		}
	}
	p := pibridge.MismatchPlan("main", "", "skew")
	if p.Error != "" || len(p.Warnings) != 1 || len(p.Tools)+len(p.Commands) > 0 || p.Profiles.Text != "skew" {
		t.Errorf("plain main: %+v, want one warning and nothing else", p)
	}
	for _, k := range []string{pibridge.SectionProfiles, pibridge.SectionMain, pibridge.SectionProfile} {
		if v, ok := p.Sections[k]; !ok || v != "" {
			t.Errorf("plain main: section %s = %q (present %v), want it deleted", k, v, ok)
		}
	}
}

package main

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion pins where the version comes from: the linker flag,
// the module version, the VCS revision (with a dirty mark), or nothing.
func TestBuildVersion(t *testing.T) {
	info := func(mod string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/facets-dev/facets", Version: mod}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, linked string
		read         func() (*debug.BuildInfo, bool)
		want         string
	}{
		{"linked wins", "v9.9.9", info("v0.2.0"), "v9.9.9"},
		{"tag", "", info("v0.2.0", "vcs.revision", rev), "v0.2.0"},
		{"pseudo-version of go install @commit", "", info("v0.0.0-20261203120000-0123456789ab"), "v0.0.0-20261203120000-0123456789ab"},
		{"checkout", "", info("(devel)", "vcs.revision", rev, "vcs.modified", "false"), "devel+0123456789ab"},
		{"dirty checkout", "", info("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "devel+0123456789ab-dirty"},
		{"no vcs", "", info("(devel)"), "devel"},
		{"no build info", "", func() (*debug.BuildInfo, bool) { return nil, false }, "devel"},
	} {
		if got := buildVersion(tc.linked, tc.read); got != tc.want {
			t.Errorf("%s: buildVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}

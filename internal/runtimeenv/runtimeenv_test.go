package runtimeenv

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/channel"
)

func TestDirsDefaults(t *testing.T) {
	agent, run := t.TempDir(), t.TempDir()
	env := Env{Getenv: func(k string) string {
		return map[string]string{envvar.AgentDir: agent, envvar.XDGRuntimeDir: run}[k]
	}}
	rt, err := Dirs{}.Runtime("/b", env)
	if err != nil {
		t.Fatal(err)
	}
	if rt.AgentDir != agent || rt.Store.Dir != filepath.Join(agent, "facets", "state") || rt.ChannelRoot != channel.RuntimeRoot(env.Getenv) || rt.Bridge != "/b" {
		t.Errorf("defaults: agent %s, state %s, channels %s, bridge %s", rt.AgentDir, rt.Store.Dir, rt.ChannelRoot, rt.Bridge)
	}
	rt, err = Dirs{StateDir: "/s", RuntimeDir: "/r", AgentDir: "/a"}.Runtime("", env)
	if err != nil || rt.Store.Dir != "/s" || rt.ChannelRoot != "/r" || rt.AgentDir != "/a" {
		t.Errorf("flags: %v %+v", err, rt)
	}
	var se *SettingError
	if _, err := (Dirs{}).Runtime("", Env{Getenv: func(string) string { return "" }}); !errors.As(err, &se) {
		t.Errorf("no agent dir and no home: %v, want a SettingError", err)
	}
}

func TestSnapshotLoad(t *testing.T) {
	agent, proj := t.TempDir(), t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(agent, "facets", "profiles", "worker", "config.json"), `{"version":1,"name":"worker","tools":["read"]}`)
	write(filepath.Join(agent, "facets", "profiles", "bad", "config.json"), `{"version":1,"name":"bad","tools":"read"}`)
	bridge := filepath.Join(t.TempDir(), "index.js")
	write(bridge, "")
	env := Env{Getenv: func(k string) string { return map[string]string{envvar.AgentDir: agent}[k] }, Home: t.TempDir()}
	src := compiler.Sources{Cwd: proj}
	for _, tc := range []struct {
		name, profile string
		snap          Snapshot
		setting       bool   // a SettingError
		want          string // in the error; "" for none
	}{
		{"compiled", "worker", Snapshot{Bridge: bridge, Sources: src}, false, ""},
		{"no bridge", "worker", Snapshot{Sources: src}, true, "no Pi bridge"},
		{"bridge is a directory", "worker", Snapshot{Bridge: filepath.Dir(bridge), Sources: src}, true, "is not a file"},
		{"missing manifest", "worker", Snapshot{Bridge: bridge, Manifest: filepath.Join(proj, "none.json"), Sources: src}, true, "none.json"},
		{"profile with errors", "bad", Snapshot{Bridge: bridge, Sources: src}, false, "profile bad does not compile"},
	} {
		m, b, err := tc.snap.Load(tc.profile, env)
		var se *SettingError
		switch {
		case tc.want == "" && (err != nil || m == nil || b != bridge):
			t.Errorf("%s: %v, bridge %q", tc.name, err, b)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		case tc.want != "" && errors.As(err, &se) != tc.setting:
			t.Errorf("%s: %v is a SettingError: %v, want %v", tc.name, err, !tc.setting, tc.setting)
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/pibridge"
)

// TestPlanReadsOnlyPlanEnv: every variable a startup plan reads, Main or
// Sub, with or without a profile, a frozen manifest or role packs, is in
// envvar.Plan, the list the Pi extension sends the plan daemon; the
// extension's list (index.ts PLAN_ENV) is that one.
func TestPlanReadsOnlyPlanEnv(t *testing.T) {
	agent, proj, run := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(agent, "facets", "profiles", "worker", "config.json"), `{"version":1,"name":"worker","model":"p/m","tools":["read"]}`)
	env := map[string]string{envvar.AgentDir: agent, envvar.Home: t.TempDir(), envvar.XDGRuntimeDir: run,
		envvar.RolePacks: t.TempDir(), envvar.BundledRoles: t.TempDir()}
	frozen := filepath.Join(t.TempDir(), "m.json")
	if code, _, errs := runApp(t, env, "", "compile", "-C", proj, "--out", frozen); code != 0 {
		t.Fatalf("compile: %d %s", code, errs)
	}
	var mu sync.Mutex
	read := map[string]bool{}
	plan := func(env map[string]string, stdin string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string {
			mu.Lock()
			read[k] = true
			mu.Unlock()
			return env[k]
		}}
		if code := a.run(append([]string{"pi-extension", "plan", "--protocol", strconv.Itoa(pibridge.Protocol)}, args...)); code != 0 {
			t.Fatalf("plan %q: %d %s", args, code, errb.String())
		}
		return out.String()
	}
	req := func(fields map[string]any) string { b, _ := json.Marshal(fields); return string(b) }
	plan(env, req(map[string]any{"cwd": proj, "mainSession": "s"}), "--role", "main")
	plan(env, req(map[string]any{"cwd": proj, "profile": "worker", "piTrusted": true}), "--role", "main")
	// with is env plus kv (name, value, ...).
	with := func(kv ...string) map[string]string {
		m := maps.Clone(env)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	plan(with(envvar.Manifest, frozen), req(map[string]any{"cwd": proj, "profile": "worker"}), "--role", "main")
	if out := plan(with(envvar.PlanSocket, filepath.Join(t.TempDir(), "none", "s.sock")), req(map[string]any{"cwd": proj}), "--role", "main"); !strings.Contains(out, `"role":"main"`) {
		t.Fatalf("plan: %s", out)
	}
	// A Sub: its channel and token file.
	plan(with(envvar.Channel, filepath.Join(run, "nowhere"), envvar.TokenFile, filepath.Join(run, "token")), "", "--role", "sub")

	for k := range read {
		if !slices.Contains(envvar.Plan, k) {
			t.Errorf("the plan reads %s, which is not in envvar.Plan (the extension would not send it to the daemon)", k)
		}
	}
	for _, k := range []string{envvar.AgentDir, envvar.Manifest, envvar.Channel} {
		if !read[k] {
			t.Errorf("the plans above never read %s: is this test still running plans?", k)
		}
	}
	source, err := os.ReadFile("../../runtime/pibridge/extension/index.ts")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const PLAN_ENV = \[([^\]]*)\];$`).FindSubmatch(source)
	if m == nil {
		t.Fatal("index.ts has no PLAN_ENV list")
	}
	var ts []string
	for _, q := range regexp.MustCompile(`"([A-Z_]+)"`).FindAllSubmatch(m[1], -1) {
		ts = append(ts, string(q[1]))
	}
	if !slices.Equal(ts, envvar.Plan) {
		t.Errorf("index.ts PLAN_ENV = %q, want envvar.Plan %q", ts, envvar.Plan)
	}
}

func TestPlanEnvKeepsOnlyWhatAPlanReads(t *testing.T) {
	env, environ := planEnv([]string{"OPENAI_API_KEY=sk-1", envvar.AgentDir + "=/a", envvar.AgentDir + "=/b", "PATH=/bin", envvar.Home + "=/h", "junk"})
	if want := map[string]string{envvar.AgentDir: "/a", envvar.Home: "/h"}; !maps.Equal(env, want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	if want := []string{envvar.AgentDir + "=/a", envvar.Home + "=/h"}; !slices.Equal(environ, want) {
		t.Errorf("environ = %q, want %q", environ, want)
	}
}

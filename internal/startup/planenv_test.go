package startup

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/cue"
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
	writeManifest(t, env, proj, frozen)

	var mu sync.Mutex
	read := map[string]bool{}
	plan := func(env map[string]string, stdin string, role string) string {
		t.Helper()
		getenv := func(k string) string {
			mu.Lock()
			read[k] = true
			mu.Unlock()
			return env[k]
		}
		c := Call{Role: role, Manifest: getenv(envvar.Manifest), Sources: compiler.Sources{Cwd: "."},
			Extension: pibridge.Peer{Protocol: pibridge.Protocol}, Binary: pibridge.Peer{Protocol: pibridge.Protocol}}
		readReq := func(c *Call) error {
			r, ok, err := pibridge.ReadRequest(strings.NewReader(stdin))
			if ok {
				c.Apply(r)
			}
			return err
		}
		p := Plan(c, readReq, getenv, getenv(envvar.Home))
		b, _ := json.Marshal(p)
		return string(b)
	}
	req := func(fields map[string]any) string { b, _ := json.Marshal(fields); return string(b) }
	plan(env, req(map[string]any{"cwd": proj, "mainSession": "s"}), "main")
	plan(env, req(map[string]any{"cwd": proj, "profile": "worker", "piTrusted": true}), "main")
	// with is env plus kv (name, value, ...).
	with := func(kv ...string) map[string]string {
		m := maps.Clone(env)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	if out := plan(with(envvar.Manifest, frozen), req(map[string]any{"cwd": proj, "profile": "worker"}), "main"); !strings.Contains(out, `"worker"`) {
		t.Fatalf("plan from the frozen manifest: %s", out)
	}
	// A Main whose runs live under $TMPDIR.
	noRuntime := with()
	delete(noRuntime, envvar.XDGRuntimeDir)
	noRuntime[envvar.TmpDir] = run
	plan(noRuntime, req(map[string]any{"cwd": proj, "mainSession": "s"}), "main")
	// A Sub: its channel and token file.
	plan(with(envvar.Channel, filepath.Join(run, "nowhere"), envvar.TokenFile, filepath.Join(run, "token")), "", "sub")

	for k := range read {
		if !slices.Contains(envvar.Plan, k) {
			t.Errorf("the plan reads %s, which is not in envvar.Plan (the extension would not send it to the daemon)", k)
		}
	}
	for _, k := range envvar.Plan {
		if !read[k] {
			t.Errorf("envvar.Plan lists %s, which no plan above read: send the daemon only what a plan reads", k)
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

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeManifest compiles the sources env and cwd name to a frozen
// manifest at out, as facets compile --out does.
func writeManifest(t *testing.T, env map[string]string, cwd, out string) {
	t.Helper()
	opts, err := compiler.Sources{Cwd: cwd}.Options(func(k string) string { return env[k] }, env[envvar.Home])
	if err != nil {
		t.Fatal(err)
	}
	schema, err := cue.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := compiler.Compile(schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, out, string(b))
}

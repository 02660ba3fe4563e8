package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/launch"
	"github.com/facets-dev/facets/runtime/pibridge"
)

func runPiCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	return runApp(t, env, "", args...)
}

func TestPiExtensionPathAndInstall(t *testing.T) {
	t.Parallel()
	agent := t.TempDir()
	env := map[string]string{envvar.AgentDir: agent}
	want := filepath.Join(agent, "extensions", "facets", "index.js")
	if code, out, errs := runPiCLI(t, env, "pi-extension", "--path"); code != 0 || out != want+"\n" {
		t.Fatalf("--path = %d %q %q, want %q", code, out, errs, want)
	}
	if _, err := os.Stat(want); err == nil {
		t.Fatalf("--path wrote the extension")
	}
	code, out, errs := runPiCLI(t, env, "pi-extension", "install")
	if code != 0 || out != want+"\n" {
		t.Fatalf("install = %d %q %q", code, out, errs)
	}
	got, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	// The embedded extension is the file in the tree, TypeScript's output
	// for index.ts; package.json makes it what Pi loads, and index.ts
	// (where older installs put the extension) re-exports it.
	source, err := os.ReadFile("../../runtime/pibridge/extension/index.js")
	if err != nil || !bytes.Equal(got, source) {
		t.Fatalf("installed extension differs from runtime/pibridge/extension/index.js (%v)", err)
	}
	pkg, err := os.ReadFile(filepath.Join(agent, "extensions", "facets", pibridge.PackageFile))
	if err != nil || !strings.Contains(string(pkg), `"type": "module"`) || !strings.Contains(string(pkg), `"extensions": ["./index.js"]`) {
		t.Errorf("package.json = %s (%v), want an ES module whose Pi entry point is index.js", pkg, err)
	}
	if legacy, err := os.ReadFile(filepath.Join(agent, "extensions", "facets", pibridge.LegacyFile)); err != nil || !strings.Contains(string(legacy), `export { default } from "./index.js";`) {
		t.Errorf("index.ts = %s (%v), want a re-export of index.js", legacy, err)
	}
	var cfg pibridge.Config
	data, err := os.ReadFile(filepath.Join(agent, "extensions", "facets", pibridge.ConfigFile))
	if err != nil || json.Unmarshal(data, &cfg) != nil {
		t.Fatalf("bridge config = %s (%v)", data, err)
	}
	// The test binary itself sits in a go-build cache dir, like a go run
	// binary: it must not be recorded.
	exe, _ := os.Executable()
	if strings.Contains(exe, "go-build") {
		if cfg.FacetsBin != "" || !strings.Contains(errs, "temporary go run binary") {
			t.Errorf("go-build binary recorded: config %s, stderr %q", data, errs)
		}
	} else if !filepath.IsAbs(cfg.FacetsBin) {
		t.Errorf("bridge config = %s, want an absolute facetsBin", data)
	}
	if cfg.FacetsVersion != facetsVersion() {
		t.Errorf("bridge config = %s, want facetsVersion %q", data, facetsVersion())
	}

	dir := filepath.Join(t.TempDir(), "ext")
	if code, out, _ := runPiCLI(t, env, "pi-extension", "install", "--dir", dir); code != 0 || out != filepath.Join(dir, "index.js")+"\n" {
		t.Fatalf("install --dir = %d %q", code, out)
	}
	if code, out, _ := runPiCLI(t, env, "pi-extension", "--path", "--dir", dir); code != 0 || out != filepath.Join(dir, "index.js")+"\n" {
		t.Fatalf("--path --dir = %d %q", code, out)
	}
}

func TestPiExtensionPlan(t *testing.T) {
	t.Parallel()
	agent := t.TempDir()
	env := map[string]string{envvar.AgentDir: agent}
	p := filepath.Join(agent, "facets", "profiles", "reviewer", "config.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"version":1,"name":"reviewer","tools":["read"],"model":"mock/m","instructions":"Only read."}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runPiCLI(t, env, "pi-extension", "plan", "--protocol", strconv.Itoa(pibridge.Protocol), "--role", "main", "-C", t.TempDir(), "--no-trust", "--profile", "reviewer")
	if code != 0 {
		t.Fatalf("plan = %d %s", code, errs)
	}
	var plan pibridge.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Error != "" || plan.Profile == nil || plan.Profile.ModelID != "m" || plan.Sections[pibridge.SectionProfile] != "## Active Facets profile: reviewer\nOnly read." {
		t.Errorf("plan = %+v", plan)
	}

	code, out, _ = runPiCLI(t, env, "pi-extension", "plan", "--protocol", strconv.Itoa(pibridge.Protocol), "--role", "sub")
	if code != 0 || !strings.Contains(out, `"error":"PI_FACETS_CHANNEL is missing in Sub Pi."`) {
		t.Errorf("sub plan without a channel = %d %s", code, out)
	}
	if code, _, _ := runPiCLI(t, env, "pi-extension", "plan", "--protocol", strconv.Itoa(pibridge.Protocol), "--role", "boss"); code != exitUsage {
		t.Errorf("plan --role boss exit = %d, want %d", code, exitUsage)
	}
	if plan.Protocol != pibridge.Protocol || plan.Facets != facetsVersion() || plan.Mismatch != "" {
		t.Errorf("plan handshake = protocol %d facets %q mismatch %q, want %d %q and none", plan.Protocol, plan.Facets, plan.Mismatch, pibridge.Protocol, facetsVersion())
	}
}

// TestPiExtensionPlanRequest: the request the extension writes on the
// plan's stdin at session_start overrides the flags: its cwd,
// Pi's --approve, profile and session decide the plan; a malformed one is the
// plan's error, and an extension of another protocol is not read at all.
func TestPiExtensionPlanRequest(t *testing.T) {
	t.Parallel()
	agent, proj := t.TempDir(), t.TempDir()
	env := map[string]string{envvar.AgentDir: agent, envvar.XDGRuntimeDir: t.TempDir()}
	p := filepath.Join(proj, ".pi", "facets", "profiles", "local", "config.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"version":1,"name":"local","tools":["read"],"instructions":"Project."}`), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := func(stdin string, args ...string) pibridge.Plan {
		t.Helper()
		code, out, errs := runApp(t, env, stdin, append([]string{"pi-extension", "plan", "--role", "main", "--protocol", strconv.Itoa(pibridge.Protocol), "--no-trust"}, args...)...)
		var pl pibridge.Plan
		if code != 0 || json.Unmarshal([]byte(out), &pl) != nil {
			t.Fatalf("plan %q < %q = %d %s %s", args, stdin, code, out, errs)
		}
		return pl
	}
	req, _ := json.Marshal(map[string]any{"cwd": proj, "approve": true, "profile": "local", "mainSession": "s1"})
	if pl := plan(string(req)); pl.Error != "" || pl.Profile == nil || pl.Profile.Name != "local" || pl.Serve || !pl.Trusted {
		t.Errorf("plan from the request = %+v, want profile local from the trusted project and no serve", pl)
	}
	// Pi's own "yes" for a project that holds nothing Pi asks trust for is
	// its default, not a decision: the project stays untrusted.
	req, _ = json.Marshal(map[string]any{"cwd": proj, "piTrusted": true, "profile": "local"})
	code, out, errs := runApp(t, env, string(req), "pi-extension", "plan", "--role", "main", "--protocol", strconv.Itoa(pibridge.Protocol))
	var pl pibridge.Plan
	if code != 0 || json.Unmarshal([]byte(out), &pl) != nil || !strings.Contains(pl.Error, "Unknown Facets profile 'local'") || pl.Trusted ||
		!slices.ContainsFunc(pl.Warnings, func(w string) bool {
			return strings.HasPrefix(w, "Facets did not load "+filepath.Join(proj, ".pi", "facets")+" ")
		}) {
		t.Errorf("plan with Pi's default trust = %d %+v %s, want local unknown, untrusted, and a line naming the skipped folder", code, pl, errs)
	}
	if pl := plan("", "-C", proj, "--profile", "local"); !strings.Contains(pl.Error, "local") || pl.Profile != nil {
		t.Errorf("plan from flags alone (untrusted) = %+v, want local unknown", pl)
	}
	if pl := plan(`{"cwd":`); !strings.Contains(pl.Error, "read the plan request") {
		t.Errorf("malformed request: plan error %q", pl.Error)
	}
	if pl := plan(`{"profle":"x"}`); !strings.Contains(pl.Error, "profle") {
		t.Errorf("unknown request field: plan error %q", pl.Error)
	}
	code, out, _ = runApp(t, env, `{"cwd":`, "pi-extension", "plan", "--role", "main", "--protocol", "2")
	if code != 0 || !strings.Contains(out, `"mismatch":"The facets Pi extension (protocol 2`) {
		t.Errorf("protocol 2 extension = %d %s, want the mismatch plan", code, out)
	}
}

// TestPiExtensionPlanHandshake: an extension of another protocol (none
// given is protocol 1, every extension from before the handshake) gets the
// mismatch plan naming both versions, as an error with --profile and as a
// warning without; serve of another protocol answers nothing.
func TestPiExtensionPlanHandshake(t *testing.T) {
	t.Parallel()
	env := map[string]string{envvar.AgentDir: t.TempDir()}
	for _, tc := range []struct {
		args      []string
		wantError bool
		want      string
	}{
		{[]string{"--profile", "reviewer"}, true, "(protocol 1, installed before the version handshake)"},
		{nil, false, "(protocol 1, installed before the version handshake)"},
		{[]string{"--protocol", "99", "--extension-version", "9.9.9"}, false, "(protocol 99, installed by facets 9.9.9)"},
	} {
		code, out, errs := runPiCLI(t, env, append([]string{"pi-extension", "plan", "--role", "main", "--no-trust"}, tc.args...)...)
		var plan pibridge.Plan
		if code != 0 || json.Unmarshal([]byte(out), &plan) != nil {
			t.Fatalf("plan %q = %d %s %s", tc.args, code, out, errs)
		}
		want := "does not match the facets binary (protocol " + strconv.Itoa(pibridge.Protocol) + ", facets " + facetsVersion() + " at "
		if !strings.Contains(plan.Mismatch, tc.want) || !strings.Contains(plan.Mismatch, want) || !strings.Contains(plan.Mismatch, "`facets pi-extension install`") ||
			(plan.Error != "") != tc.wantError || (len(plan.Warnings) == 1) == tc.wantError || len(plan.Tools) > 0 {
			t.Errorf("plan %q = %+v, want the mismatch %q as error=%v", tc.args, plan, tc.want, tc.wantError)
		}
	}
	code, out, errs := runApp(t, env, `{"op":"sync","id":1}`+"\n", "pi-extension", "serve", "--role", "main", "--main-session", "m1")
	if code != 0 || out != "" {
		t.Errorf("serve without --protocol = %d %q %q, want a silent exit 0", code, out, errs)
	}
}

// TestSubPlanCarriesTheTask: herdr types only launch.KickoffPrompt into a
// Sub; the plan hands the extension the task from the channel manifest to
// replace it with.
func TestSubPlanCarriesTheTask(t *testing.T) {
	t.Parallel()
	c := newCLIChannel(t)
	env := map[string]string{envvar.Channel: c.Dir(), envvar.TokenFile: tokenFile(t, c.Manifest().Token)}
	code, out, errs := runPiCLI(t, env, "pi-extension", "plan", "--protocol", strconv.Itoa(pibridge.Protocol), "--role", "sub")
	if code != 0 {
		t.Fatalf("plan = %d %s", code, errs)
	}
	var plan pibridge.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Error != "" || plan.Kickoff != launch.KickoffPrompt || plan.Task != c.Manifest().Task {
		t.Errorf("sub plan kickoff %q task %q error %q; want %q and %q", plan.Kickoff, plan.Task, plan.Error, launch.KickoffPrompt, c.Manifest().Task)
	}
}

// TestPlanNeedsNoDigests: the startup plan compiles without digests
// (sourceFlags.noDigests), which is only sound while no plan reads one:
// every plan of the example tree, with each profile and with none, is the
// same from a manifest with digests and from one without.
func TestPlanNeedsNoDigests(t *testing.T) {
	t.Parallel()
	example, err := filepath.Abs(filepath.Join("..", "..", "testdata", "example"))
	if err != nil {
		t.Fatal(err)
	}
	var src sourceFlags
	src.getenv = func(string) string { return "" }
	src.agentDir, src.cwd, src.home, src.trust = filepath.Join(example, "agent"), filepath.Join(example, "project", "service"), t.TempDir(), true
	src.rolePacks = []string{filepath.Join(example, "rolepack", "roles")}
	opts, err := src.options()
	if err != nil {
		t.Fatal(err)
	}
	compile := func(noDigests bool) (*manifest.Manifest, []compiler.Diagnostic) {
		opts.NoDigests = noDigests
		schema, err := cue.Load()
		if err != nil {
			t.Fatal(err)
		}
		m, ds, err := compiler.Compile(schema, opts)
		if err != nil {
			t.Fatal(err)
		}
		return m, ds
	}
	full, fullDs := compile(false)
	bare, bareDs := compile(true)
	if len(full.Profiles) < 2 || full.Profiles[0].SourceSHA256 == "" || bare.Profiles[0].SourceSHA256 != "" {
		t.Fatalf("fixture lost its point: %d profiles, digests %q / %q", len(full.Profiles), full.Profiles[0].SourceSHA256, bare.Profiles[0].SourceSHA256)
	}
	for _, name := range append([]string{""}, profileNames(full)...) {
		if diff := cmp.Diff(pibridge.MainPlan(full, fullDs, name), pibridge.MainPlan(bare, bareDs, name)); diff != "" {
			t.Errorf("plan for %q differs without digests (-with +without):\n%s", name, diff)
		}
	}
}

func profileNames(m *manifest.Manifest) []string {
	var names []string
	for _, p := range m.Profiles {
		names = append(names, p.Name)
	}
	return names
}

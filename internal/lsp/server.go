// Package lsp is facets lsp: a Language Server Protocol server over stdio
// whose diagnostics are exactly what facets check reports for each open
// file, in its real scope (in a repository Pi does not trust, what
// check --project-only reports). It is the editor's view of the compiler,
// as check is the terminal's: it runs the compiler over the editor's
// unsaved buffers (a profiles.Overlay) and converts the result; it
// launches and executes nothing.
package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/internal/safefile"
	"github.com/facets-dev/facets/profiles"
)

// Config says how the server finds what to compile.
type Config struct {
	// Options returns the compile options for a Main started in root, the
	// client's workspace folder, or for the default working directory when
	// root is empty (the client named none).
	Options func(root string) (compiler.Options, error)
	// Repository returns the options of check --project-only -C root, for
	// the files of a repository whose project is not trusted: the editor
	// shows what CI will say of them. Nil keeps such files in their Main's
	// view (untrusted, so unloaded).
	Repository func(root string) (compiler.Options, error)
	// Debounce is how long changes made outside the editor (file-system
	// events) are collected before one re-validation; zero means 50ms.
	Debounce time.Duration
	// Log receives one line per problem the client cannot be told about;
	// nil discards them.
	Log io.Writer
}

// document is one file the client has open.
type document struct {
	uri     string
	path    string
	version int
	text    string
	// notUTF8 is the file's bytes on disk when they are not UTF-8 and the
	// buffer is unmodified: an editor converts such a file when it opens
	// it, and check's verdict on it (invalid-utf8-*) comes from the bytes.
	notUTF8 []byte
}

// maxDiskRead bounds the read of an open file's bytes (diskBytes); a
// larger file is left to the buffer, and check refuses it anyway.
const maxDiskRead = 4 << 20

// diskBytes returns the bytes of the file at path when they are not UTF-8,
// else nil.
func diskBytes(path string) []byte {
	b, err := safefile.ReadFile(path, maxDiskRead)
	if err != nil || utf8.Valid(b) {
		return nil
	}
	return b
}

// Server is one LSP session. Messages are handled in order on the reading
// goroutine; validation runs on its own goroutine, so a keystroke is never
// queued behind a compile, and changes made meanwhile coalesce into one
// next compile.
type Server struct {
	cfg Config
	out *writer

	mu          sync.Mutex
	opts        compiler.Options
	optsErr     error
	initialized bool
	shutdown    bool
	docs        map[string]*document // by URI
	published   map[string]string    // URI -> JSON of the diagnostics last sent

	kick    chan struct{}
	ready   chan struct{} // closed once initialize has set opts
	rewatch chan struct{} // a document opened: its scope may need watching

	schemaInfo *schemaInfo
}

// NewServer returns a server writing to out.
func NewServer(out io.Writer, cfg Config) *Server {
	if cfg.Debounce <= 0 {
		cfg.Debounce = 50 * time.Millisecond
	}
	return &Server{cfg: cfg, out: &writer{w: out}, docs: map[string]*document{}, published: map[string]string{},
		kick: make(chan struct{}, 1), ready: make(chan struct{}), rewatch: make(chan struct{}, 1)}
}

// Serve reads messages from in until the client sends exit or closes the
// stream. It returns nil after a shutdown request was answered, and an
// error otherwise (the exit status LSP asks for), or when the stream
// breaks.
func Serve(ctx context.Context, in io.Reader, out io.Writer, cfg Config) error {
	return NewServer(out, cfg).Run(ctx, in)
}

// Run is Serve on a server made by NewServer.
func (s *Server) Run(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: deferred calls run last first
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.validateLoop(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.watchLoop(ctx, s.ready)
	}()
	r := newReader(in)
	for {
		m, err := r.read()
		var bad *BadMessageError
		switch {
		case errors.Is(err, io.EOF):
			return s.exitStatus("the client closed the stream")
		case errors.As(err, &bad):
			// The id is unknown, so the error answers no request (null id).
			if err := s.out.reply(json.RawMessage("null"), nil, &responseError{Code: bad.Code, Message: bad.Error()}); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("lsp: %w", err)
		}
		if m.Method == "exit" {
			return s.exitStatus("exit before shutdown")
		}
		if err := s.handle(m); err != nil {
			return err
		}
	}
}

func (s *Server) exitStatus(why string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return nil
	}
	return errors.New("lsp: " + why)
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "facets lsp: "+format+"\n", args...)
	}
}

// handle answers one message. Only a write failure is returned: the
// connection is gone.
func (s *Server) handle(m *message) error {
	if m.Method == "" {
		return nil // a response to a request the server never sends
	}
	s.mu.Lock()
	initialized, shutdown := s.initialized, s.shutdown
	s.mu.Unlock()
	reply := func(result any, rerr *responseError) error {
		if m.isNotification() {
			return nil
		}
		return s.out.reply(m.ID, result, rerr)
	}
	switch {
	case m.Method == "initialize":
		if initialized {
			return reply(nil, &responseError{Code: codeInvalidRequest, Message: "initialize was already called"})
		}
		return reply(s.initialize(m.Params))
	case !initialized:
		return reply(nil, &responseError{Code: codeServerNotInitialized, Message: "the server is not initialized"})
	case shutdown:
		return reply(nil, &responseError{Code: codeInvalidAfterShutdown, Message: "the server is shutting down"})
	}
	switch m.Method {
	case "initialized", "$/setTrace", "$/cancelRequest", "workspace/didChangeConfiguration":
		return nil
	case "shutdown":
		s.mu.Lock()
		s.shutdown = true
		s.mu.Unlock()
		return reply(nil, nil)
	case "textDocument/didOpen":
		var p didOpenParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			s.logf("didOpen: %v", err)
			return nil
		}
		s.open(p)
		return nil
	case "textDocument/didChange":
		var p didChangeParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			s.logf("didChange: %v", err)
			return nil
		}
		s.change(p)
		return nil
	case "textDocument/didSave":
		var p didSaveParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			s.logf("didSave: %v", err)
			return nil
		}
		s.save(p)
		return nil
	case "textDocument/didClose":
		var p didCloseParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			s.logf("didClose: %v", err)
			return nil
		}
		return s.close(p)
	case "textDocument/completion":
		var p textDocumentPositionParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return reply(nil, &responseError{Code: codeInvalidParams, Message: err.Error()})
		}
		return reply(s.completion(p), nil)
	case "textDocument/hover":
		var p textDocumentPositionParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return reply(nil, &responseError{Code: codeInvalidParams, Message: err.Error()})
		}
		h := s.hover(p)
		if h == nil {
			return reply(nil, nil)
		}
		return reply(h, nil)
	}
	if m.isNotification() {
		return nil // unknown notifications are ignored, as LSP says
	}
	return reply(nil, &responseError{Code: codeMethodNotFound, Message: "method not supported: " + m.Method})
}

type initializeResult struct {
	Capabilities serverCapabilities `json:"capabilities"`
	ServerInfo   struct {
		Name string `json:"name"`
	} `json:"serverInfo"`
}

type serverCapabilities struct {
	PositionEncoding string `json:"positionEncoding"`
	TextDocumentSync struct {
		OpenClose bool `json:"openClose"`
		Change    int  `json:"change"`
		Save      struct {
			IncludeText bool `json:"includeText"`
		} `json:"save"`
	} `json:"textDocumentSync"`
	CompletionProvider struct {
		TriggerCharacters []string `json:"triggerCharacters"`
	} `json:"completionProvider"`
	HoverProvider bool `json:"hoverProvider"`
}

func (s *Server) initialize(raw json.RawMessage) (any, *responseError) {
	var p initializeParams
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, &responseError{Code: codeInvalidParams, Message: err.Error()}
		}
	}
	root := ""
	switch {
	case len(p.WorkspaceFolders) > 0:
		root, _ = uriPath(p.WorkspaceFolders[0].URI)
	case p.RootURI != nil:
		root, _ = uriPath(*p.RootURI)
	case p.RootPath != nil:
		root = *p.RootPath
	}
	opts, err := s.cfg.Options(root)
	if err != nil && root != "" {
		// A workspace folder that cannot be a Main's working directory
		// (it is gone, or not local): fall back to the default.
		s.logf("workspace folder %s: %v", root, err)
		opts, err = s.cfg.Options("")
	}
	info, ierr := loadSchemaInfo()
	s.mu.Lock()
	s.opts, s.optsErr, s.initialized = opts, err, true
	s.schemaInfo = info
	s.mu.Unlock()
	close(s.ready)
	if ierr != nil {
		s.logf("schema documentation: %v", ierr)
	}
	var res initializeResult
	res.ServerInfo.Name = "facets"
	c := &res.Capabilities
	c.PositionEncoding = "utf-16"
	c.TextDocumentSync.OpenClose = true
	c.TextDocumentSync.Change = 1 // full documents
	c.CompletionProvider.TriggerCharacters = []string{`"`, ":", " ", "/"}
	c.HoverProvider = true
	return res, nil
}

func (s *Server) open(p didOpenParams) {
	path, ok := uriPath(p.TextDocument.URI)
	if !ok {
		s.logf("didOpen: %s is not a file URI; it is not validated", p.TextDocument.URI)
		return
	}
	d := &document{uri: p.TextDocument.URI, path: path, version: p.TextDocument.Version, text: p.TextDocument.Text, notUTF8: diskBytes(path)}
	s.mu.Lock()
	s.docs[p.TextDocument.URI] = d
	s.mu.Unlock()
	s.request()
	select {
	case s.rewatch <- struct{}{}:
	default:
	}
}

func (s *Server) change(p didChangeParams) {
	s.mu.Lock()
	d := s.docs[p.TextDocument.URI]
	if d != nil {
		for _, c := range p.ContentChanges {
			d.text = applyChange(d.text, c)
		}
		d.version = p.TextDocument.Version
		d.notUTF8 = nil // the buffer is what will be saved
	}
	s.mu.Unlock()
	if d != nil {
		s.request()
	}
}

func (s *Server) save(p didSaveParams) {
	s.mu.Lock()
	d := s.docs[p.TextDocument.URI]
	if d != nil && p.Text != nil {
		d.text = *p.Text
	}
	s.mu.Unlock()
	if d != nil {
		b := diskBytes(d.path) // what the editor wrote, in the file's encoding
		s.mu.Lock()
		d.notUTF8 = b
		s.mu.Unlock()
	}
	s.request()
}

// close forgets the buffer: the file on disk counts again, for it and for
// the files whose verdict it changes. Its diagnostics are cleared, as
// clients show only open files' diagnostics of a server that validates
// open files.
func (s *Server) close(p didCloseParams) error {
	s.mu.Lock()
	_, had := s.docs[p.TextDocument.URI]
	delete(s.docs, p.TextDocument.URI)
	delete(s.published, p.TextDocument.URI)
	s.mu.Unlock()
	if !had {
		return nil
	}
	s.request()
	return s.out.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: p.TextDocument.URI, Diagnostics: []diagnostic{}})
}

// request asks the validation goroutine for a pass; requests made while
// one runs coalesce into one more.
func (s *Server) request() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Server) validateLoop(ctx context.Context) {
	schema, err := cue.Load()
	if err != nil {
		s.logf("load schema: %v", err)
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		s.validate(schema)
	}
}

// snapshot is what one validation pass works from.
type snapshot struct {
	opts    compiler.Options
	optsErr error
	docs    []document
}

func (s *Server) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := snapshot{opts: s.opts, optsErr: s.optsErr}
	for _, d := range s.docs {
		snap.docs = append(snap.docs, *d)
	}
	slices.SortFunc(snap.docs, func(a, b document) int { return strings.Compare(a.uri, b.uri) })
	return snap
}

// validate compiles the open documents' scopes with their buffers in
// place of the files and publishes each document's diagnostics where they
// changed.
func (s *Server) validate(schema *cue.Schema) {
	snap := s.snapshot()
	results := map[string][]diagnostic{}
	if snap.optsErr != nil {
		for _, d := range snap.docs {
			results[d.uri] = []diagnostic{{Severity: severityError, Source: "facets", Code: "lsp-setup",
				Message: "facets lsp cannot check this file: " + snap.optsErr.Error()}}
		}
	} else {
		for _, group := range scopeGroups(snap.opts, snap.docs) {
			ds := s.compile(schema, group.opts, group.docs)
			for uri, d := range ds {
				results[uri] = d
			}
		}
	}
	for _, d := range snap.docs {
		diags := results[d.uri]
		if diags == nil {
			diags = []diagnostic{}
		}
		key, _ := json.Marshal(diags)
		s.mu.Lock()
		cur, open := s.docs[d.uri]
		stale := !open || cur.text != d.text
		same := s.published[d.uri] == string(key)
		if !stale && !same {
			s.published[d.uri] = string(key)
		}
		s.mu.Unlock()
		if stale || same {
			continue // a newer pass follows, or nothing changed
		}
		v := d.version
		if err := s.out.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: d.uri, Version: &v, Diagnostics: diags}); err != nil {
			s.logf("publish diagnostics: %v", err)
		}
	}
}

// scopeGroup is the documents compiled from one working directory.
type scopeGroup struct {
	opts compiler.Options
	docs []document
}

// scopeGroups assigns each document the working directory whose compile
// reports on it: the workspace's, unless the file is a project file
// (<dir>/.pi/...) of a directory that is not the workspace or one of its
// ancestors, whose real scope is a Main started in that directory.
func scopeGroups(opts compiler.Options, docs []document) []scopeGroup {
	var groups []scopeGroup
	index := map[string]int{}
	for _, d := range docs {
		cwd := opts.Env.Cwd
		if dir, ok := projectDir(d.path); ok && !within(opts.Env.Cwd, dir) && !within(d.path, opts.Env.AgentDir) {
			cwd = dir
		}
		i, ok := index[cwd]
		if !ok {
			o := opts
			o.Env.Cwd = cwd
			groups = append(groups, scopeGroup{opts: o})
			i = len(groups) - 1
			index[cwd] = i
		}
		groups[i].docs = append(groups[i].docs, d)
	}
	return groups
}

// projectDir returns the directory whose .pi folder holds path.
func projectDir(path string) (string, bool) {
	sep := string(filepath.Separator)
	i := strings.LastIndex(path, sep+".pi"+sep)
	if i < 0 {
		return "", false
	}
	if i == 0 {
		return sep, true
	}
	return path[:i], true
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// compile runs one compile with docs as the overlay and converts the
// diagnostics that name each document. The documents of a repository whose
// project opts does not trust get what check --project-only reports of
// them instead (Config.Repository), with one line saying Pi will not load
// them until the project is trusted.
func (s *Server) compile(schema *cue.Schema, opts compiler.Options, docs []document) map[string][]diagnostic {
	root, ok := s.untrustedRepository(opts)
	if !ok {
		return s.diagnose(schema, opts, docs, false)
	}
	var inRepo, rest []document
	for _, d := range docs {
		if within(d.path, root) && !within(d.path, opts.Env.AgentDir) {
			inRepo = append(inRepo, d)
		} else {
			rest = append(rest, d)
		}
	}
	out := s.diagnose(schema, opts, rest, false)
	ro, err := s.cfg.Repository(root)
	if err != nil {
		for _, d := range inRepo {
			out[d.uri] = []diagnostic{{Severity: severityError, Source: "facets", Code: "lsp-setup",
				Message: "facets lsp cannot check this file: " + err.Error()}}
		}
		return out
	}
	maps.Copy(out, s.diagnose(schema, ro, inRepo, true))
	return out
}

// untrustedRepository returns the repository root above opts' working
// directory when its project is not trusted.
func (s *Server) untrustedRepository(opts compiler.Options) (string, bool) {
	if s.cfg.Repository == nil {
		return "", false
	}
	root, ok := profiles.FindRepositoryRoot(opts.Env.Cwd)
	if !ok {
		return "", false
	}
	if t, err := profiles.DecideTrust(opts.Env, opts.TrustFlag, opts.PiTrust); err == nil && t.Trusted {
		return "", false
	}
	return root, true
}

// untrustedLine is the information a file of an untrusted repository gets
// beside what check --project-only reports of it.
const untrustedLine = "Pi does not load this project's .pi until the project is trusted (/trust in Pi, then restart; an entry in trust.json; or pi --approve). Shown here: what facets check --project-only, as CI runs it, reports."

// diagnose is compile for one set of options: check --project-only's
// repository check when repo is set, else a Main's compile.
func (s *Server) diagnose(schema *cue.Schema, opts compiler.Options, docs []document, repo bool) map[string][]diagnostic {
	out := map[string][]diagnostic{}
	if len(docs) == 0 {
		return out
	}
	ov := profiles.Overlay{}
	aliases := make([][]string, len(docs))
	for i, d := range docs {
		aliases[i] = docAliases(opts, d.path)
		data := []byte(d.text)
		if d.notUTF8 != nil {
			data = d.notUTF8
		}
		for _, a := range aliases[i] {
			ov[a] = data
		}
	}
	opts.Env.Overlay = ov
	opts.NoDigests = true
	opts.Names = nil
	var ds []compiler.Diagnostic
	var err error
	if repo {
		ds, err = compiler.CheckRepository(schema, opts)
	} else {
		_, ds, err = compiler.Compile(schema, opts)
	}
	if err != nil {
		for _, d := range docs {
			out[d.uri] = []diagnostic{{Severity: severityError, Source: "facets", Code: "lsp-compile",
				Message: "facets lsp cannot check this file: " + err.Error()}}
		}
		return out
	}
	byPath := map[string][]compiler.Diagnostic{}
	var dirDiags []compiler.Diagnostic
	isDir := map[string]bool{}
	for _, d := range ds {
		if d.File == "" {
			continue
		}
		byPath[d.File] = append(byPath[d.File], d)
		dir, seen := isDir[d.File]
		if !seen {
			fi, err := os.Stat(d.File)
			dir = err == nil && fi.IsDir()
			isDir[d.File] = dir
		}
		if dir {
			dirDiags = append(dirDiags, d)
		}
	}
	for i, doc := range docs {
		lines := newLineIndex(doc.text)
		var conv []diagnostic
		for _, a := range aliases[i] {
			for _, d := range byPath[a] {
				conv = append(conv, convert(d, lines))
			}
			// A finding about a directory (an untrusted project's
			// .pi/facets, a profile defined twice) concerns every file
			// in it; check names the directory, the editor shows it in
			// the files.
			for _, d := range dirDiags {
				if a != d.File && within(a, d.File) {
					conv = append(conv, convert(d, lines))
				}
			}
		}
		if repo {
			conv = append(conv, diagnostic{Severity: severityInformation, Source: "facets", Code: diag.CodeUntrustedProject, Message: untrustedLine})
		}
		out[doc.uri] = conv
	}
	return out
}

// docAliases returns path and the other names discovery may give the
// same file: an editor often opens a file by its resolved path while the
// agent dir, home or project is reached through a symlink (a dotfiles
// checkout), and discovery names files by the configured path.
func docAliases(opts compiler.Options, path string) []string {
	out := []string{path}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path // a buffer not saved yet: its directory may still resolve
		if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			real = filepath.Join(dir, filepath.Base(path))
		}
	}
	roots := []string{opts.Env.AgentDir, opts.Env.Cwd, opts.Env.Home, opts.BundledRoles}
	roots = append(roots, opts.RolePacks...)
	for _, root := range roots {
		if root == "" || !filepath.IsAbs(root) {
			continue
		}
		realRoot, err := filepath.EvalSymlinks(root)
		if err != nil || !within(real, realRoot) {
			continue
		}
		rel, err := filepath.Rel(realRoot, real)
		if err != nil {
			continue
		}
		if a := filepath.Join(root, rel); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// convert turns a check diagnostic into an LSP one: lines and byte
// columns become UTF-16 positions in the buffer, the hint follows the
// message, and the files it relates to become related locations (their
// start: check names files, not places in them).
func convert(d compiler.Diagnostic, lines *lineIndex) diagnostic {
	start := lines.position(d.Line, d.Column)
	out := diagnostic{
		Range:    lspRange{Start: start, End: lines.lineEnd(start)},
		Severity: map[compiler.Severity]int{compiler.Error: severityError, compiler.Warning: severityWarning, compiler.Info: severityInformation}[d.Severity],
		Code:     d.Code,
		Source:   "facets",
		Message:  compiler.NameFileOnce(d.Message, d.File, filepath.Base(d.File)),
	}
	if out.Severity == 0 {
		out.Severity = severityError
	}
	if d.Hint != "" {
		out.Message += "\nhint: " + d.Hint
	}
	for _, r := range d.Related {
		out.RelatedInformation = append(out.RelatedInformation, diagnosticRelated{
			Location: location{URI: pathURI(r.File)}, Message: r.Note})
	}
	return out
}

// uriPath returns the local path of a file: URI.
func uriPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
		return "", false
	}
	return filepath.Clean(u.Path), true
}

// pathURI is the file: URI of an absolute path.
func pathURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

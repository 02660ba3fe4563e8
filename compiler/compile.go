package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/internal/parallel"
	"github.com/facets-dev/facets/internal/safefile"
	"github.com/facets-dev/facets/profiles"
)

// Options says what to compile.
type Options struct {
	Env profiles.Env
	// TrustFlag overrides Pi's trust decision when non-nil (--trust/--no-trust).
	TrustFlag *bool
	// PiTrust is Pi's own answer for the working directory, when Pi asks
	// (the startup plan); profiles.DecideTrust says when it counts.
	PiTrust *bool
	// Names, when set, restricts the manifest to these profiles and reports
	// only their diagnostics (an exact-name compile).
	Names []string
	// BundledRoles is the host package's bundled roles directory, if any.
	BundledRoles string
	// RolePacks are registered role-pack paths (absolute files or directories).
	RolePacks []string
	// Workers bounds parallel schema validation; zero means GOMAXPROCS.
	Workers int
	// NoDigests leaves out the manifest's digests (no resolved skill
	// file is read, no source hashed), which never yield a diagnostic: for
	// check, which discards the manifest, and the Pi startup plan, which
	// reads no digest. A manifest compiled so is never written or frozen.
	NoDigests bool
	// DiagnosticsOnly is for a caller that reads only the diagnostics
	// (check): the manifest's profiles and roles are then left empty, so a
	// large tree's launch snapshots and role bodies are never held in
	// memory. The diagnostics are the same.
	DiagnosticsOnly bool
}

// SplitRolePacks splits a FACETS_ROLE_PACKS value, a list separated like
// PATH, into role-pack paths, dropping empty entries.
func SplitRolePacks(list string) []string {
	var out []string
	for _, p := range filepath.SplitList(list) {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// profileConfig mirrors #Profile for decoding a validated config.json.
type profileConfig struct {
	Version            float64  `json:"version"` // 1 or 1.0: JSON Schema's const 1 takes both
	Name               string   `json:"name"`
	Description        string   `json:"description"`
	Model              string   `json:"model"`
	ThinkingLevel      string   `json:"thinkingLevel"`
	SessionPersistence string   `json:"sessionPersistence"`
	Invocation         string   `json:"invocation"`
	Workspace          string   `json:"workspace"`
	Tools              []string `json:"tools"`
	Skills             []string `json:"skills"`
	Instructions       string   `json:"instructions"`
}

// decodeAccepted fills cfg from the parse of a document that the generated
// validator accepted without CUE, as json.Unmarshal would, sparing a second
// decode of every valid config.json. It reports false, leaving cfg as it
// was, for any other result or any member it cannot take over exactly
// (a key it does not know, a number other than a plain integer, a string
// where a list belongs or the reverse); the caller then decodes.
func decodeAccepted(res *cue.Result, cfg *profileConfig) bool {
	var out profileConfig
	ok := true
	str := func(dst *string, f cue.Member) {
		*dst = f.Str
		ok = ok && !f.Number && !f.IsList
	}
	visited := res.EachMember(func(f cue.Member) {
		switch f.Key {
		case "version":
			v, err := strconv.ParseFloat(f.Str, 64)
			out.Version = v
			ok = ok && err == nil && f.Number
		case "name":
			str(&out.Name, f)
		case "description":
			str(&out.Description, f)
		case "model":
			str(&out.Model, f)
		case "thinkingLevel":
			str(&out.ThinkingLevel, f)
		case "sessionPersistence":
			str(&out.SessionPersistence, f)
		case "invocation":
			str(&out.Invocation, f)
		case "workspace":
			str(&out.Workspace, f)
		case "instructions":
			str(&out.Instructions, f)
		case "tools":
			out.Tools, ok = f.List, ok && f.IsList
		case "skills":
			out.Skills, ok = f.List, ok && f.IsList
		default:
			ok = false
		}
	})
	if !visited || !ok {
		return false
	}
	*cfg = out
	return true
}

// candidate is a profile that passed validation in its own scope.
type candidate struct {
	entry  profiles.Entry
	config profileConfig
	result *cue.Result
}

// Compile discovers, validates and resolves everything under opts into a
// manifest. Diagnostics describe bad input; the error is reserved for
// failures that make compiling impossible.
func Compile(schema *cue.Schema, opts Options) (*manifest.Manifest, []Diagnostic, error) {
	env := opts.Env
	c := &compilation{validator: validator{schema: schema}, workers: opts.Workers, env: env, sources: map[string]string{},
		noDigests: opts.NoDigests, diagnosticsOnly: opts.DiagnosticsOnly, realPaths: &profiles.RealPaths{}}
	trust, err := profiles.DecideTrust(env, opts.TrustFlag, opts.PiTrust)
	if err != nil {
		// Without a readable decision the project stays untrusted, the safe
		// reading, and the manifest says the default applied.
		trust = profiles.Trust{Trusted: false, Reason: "default"}
		d := Diagnostic{Severity: Error, Code: "unreadable-trust", File: env.AgentDir,
			Message: "cannot read Pi's trust settings; the project is treated as untrusted: " + err.Error(),
			Hint:    "fix the file, or pass --trust / --no-trust"}
		var serr *profiles.SettingsError
		if errors.As(err, &serr) {
			d.File, d.Line, d.Column = serr.Path, serr.Line, serr.Column
			d.Message = "cannot parse Pi's trust settings; the project is treated as untrusted: " + serr.Err.Error()
		}
		c.diag(d)
	}
	if !env.ProjectOnly {
		c.readSource(filepath.Join(env.AgentDir, "trust.json"))
		c.readSource(filepath.Join(env.AgentDir, "settings.json"))
	}
	if !trust.Trusted {
		for _, dir := range profiles.UntrustedProjectDirs(env) {
			c.diag(Diagnostic{Severity: Info, Code: diag.CodeUntrustedProject, File: dir,
				Message: "project is not trusted; its profiles, skills, roles and MAIN.md were not loaded",
				Hint:    "trust the project in Pi (/trust), add it to " + filepath.Join(env.AgentDir, "trust.json") + ` as {"/abs/project/dir": true}, or pass --trust`})
		}
	}

	m := &manifest.Manifest{
		Version:  manifest.Version,
		Cwd:      env.Cwd,
		AgentDir: env.AgentDir,
		Trust:    manifest.Trust{Trusted: trust.Trusted, Reason: trust.Reason, Path: trust.Path},
	}
	// Roles share nothing with profiles but the inputs, so they are
	// discovered and validated meanwhile, with their own schema.
	var roles []manifest.Role
	var roleCount int
	var roleDiags []Diagnostic
	var roleSources []manifest.Source
	rolesDone := make(chan struct{})
	in := RoleInput{
		BundledDir: opts.BundledRoles, Packs: opts.RolePacks,
		AgentDir: env.AgentDir, Cwd: env.Cwd, Trusted: trust.Trusted, Workers: opts.Workers,
		NoDigests: opts.NoDigests, Overlay: env.Overlay, DiagnosticsOnly: opts.DiagnosticsOnly,
	}
	if env.ProjectOnly {
		// Role packs, bundled roles and global roles are the user's, not
		// the repository's.
		in.BundledDir, in.Packs, in.AgentDir = "", nil, ""
	}
	runRoles := func(s *cue.Schema) {
		defer close(rolesDone)
		roles, roleCount, roleDiags, roleSources = compileRoles(s, in)
	}
	roleSchema, err := cue.Load()
	if err == nil {
		go runRoles(roleSchema)
	}
	var compiled []string
	m.Profiles, compiled = c.profiles(trust.Trusted)
	before := len(c.diags)
	m.Main = c.mainSections(trust.Trusted)
	mainFound := len(m.Main) > 0 || len(c.diags) > before
	if err != nil {
		runRoles(schema)
	}
	<-rolesDone
	// Roles or a MAIN.md are something found: a repository may keep only
	// those, and its check must pass.
	if !c.foundProfiles && !mainFound && roleCount == 0 && len(roleDiags) == 0 {
		c.diag(c.noProfiles(trust.Trusted))
	}
	m.Roles = roles
	c.diags = append(c.diags, roleDiags...)
	for _, s := range roleSources {
		c.sources[s.Path] = s.SHA256
	}

	diags := c.diags
	if len(opts.Names) > 0 {
		m.Profiles, diags = selectNames(m.Profiles, compiled, diags, opts.Names)
	}
	m.Diagnostics = SortDiagnostics(diags)
	m.Sources = c.sourceList()
	if m.Profiles == nil {
		m.Profiles = []manifest.Profile{}
	}
	if m.Roles == nil {
		m.Roles = []manifest.Role{}
	}
	if m.Main == nil {
		m.Main = []manifest.MainSection{}
	}
	if m.Diagnostics == nil {
		m.Diagnostics = []Diagnostic{}
	}
	return m, m.Diagnostics, nil
}

// noProfiles is the warning for a tree where facets found nothing at all:
// no profile, role or MAIN.md (nor a misnamed folder for one).
func (c *compilation) noProfiles(trusted bool) Diagnostic {
	if c.env.ProjectOnly {
		dir := profiles.ProjectProfilesDir(c.env.Cwd)
		return Diagnostic{Severity: Warning, Code: "no-profiles", File: dir,
			Message: "no Facets profiles, roles or MAIN.md found in any .pi from " + c.env.Root + " down to " + c.env.Cwd + ", nor below it",
			Hint:    "create <name>/config.json in " + dir + ", or check -C"}
	}
	where := c.env.GlobalProfilesDir()
	if trusted {
		where += " or any .pi/facets/profiles from / down to " + c.env.Cwd
	}
	return Diagnostic{Severity: Warning, Code: "no-profiles", File: c.env.GlobalProfilesDir(),
		Message: "no Facets profiles found in " + where,
		Hint:    "create <name>/config.json in " + c.env.GlobalProfilesDir() + ", or check --agent-dir, -C and project trust"}
}

type compilation struct {
	validator
	// foundProfiles is set when discovery found a profile file (valid or
	// not) or a misnamed folder meant for one.
	foundProfiles bool
	workers       int
	env           profiles.Env
	sources       map[string]string
	noDigests     bool
	// diagnosticsOnly keeps only the names of the resolved profiles
	// (Options.DiagnosticsOnly).
	diagnosticsOnly bool
	// realPaths is shared by the parallel per-profile resolutions.
	realPaths *profiles.RealPaths
}

// validator checks documents against one schema and collects diagnostics;
// parallel validation gives each worker its own, since a CUE context is not
// safe for concurrent use.
type validator struct {
	schema *cue.Schema
	diags  []Diagnostic
}

func (c *validator) diag(d Diagnostic) { c.diags = append(c.diags, d) }

// maxSourceBytes caps an optional source (a skill file) read for its
// digest; a special or larger file is not recorded rather than read.
const maxSourceBytes = 16 << 20

// readSource records the digest of an optional file that influenced the
// compile. A path is read once, however many profiles share it (a named
// skill).
func (c *compilation) readSource(path string) {
	if _, done := c.sources[path]; done {
		return
	}
	if b, err := safefile.ReadFile(path, maxSourceBytes); err == nil {
		c.sources[path] = manifest.Digest(b)
	}
}

func (c *compilation) sourceList() []manifest.Source {
	out := make([]manifest.Source, 0, len(c.sources))
	for p, d := range c.sources {
		out = append(out, manifest.Source{Path: p, SHA256: d})
	}
	slices.SortFunc(out, func(a, b manifest.Source) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// profiles validates every scope and applies precedence: nearer scopes
// replace whole profiles, and an invalid definition removes a same-named
// profile from broader scopes instead of silently falling back to it.
// It returns the compiled profiles (none when diagnosticsOnly) and their
// names, in name order.
func (c *compilation) profiles(trusted bool) (ps []manifest.Profile, compiled []string) {
	scopes := profiles.ListProfiles(c.env, trusted)
	// Entries are numbered across the scopes, in precedence order; first[s]
	// is the number of scopes[s]'s first entry.
	first := make([]int, len(scopes)+1)
	for s := range scopes {
		first[s+1] = first[s] + scopes[s].Len()
	}
	at := func(i int) (*profiles.ProfileList, int) {
		s, _ := slices.BinarySearch(first, i+1)
		return &scopes[s-1], i - first[s-1]
	}
	configPath := func(i int) string { l, j := at(i); return l.ConfigPath(j) }
	checked := c.validateAll(first[len(scopes)], func(i int) profiles.Entry { l, j := at(i); return l.Entry(j) }, trusted)
	effective := map[string]int{} // name -> number of the definition in use
	shadowed := map[string][]string{}
	// broken holds, per name, the diagnostics of invalid definitions that
	// no valid nearer definition has replaced yet. A valid nearer one makes
	// them warnings about a masked file: they stay visible but must not
	// block the profile that is actually used.
	broken := map[string][]Diagnostic{}
	i := 0
	for si := range scopes {
		sp := &scopes[si]
		c.diags = append(c.diags, sp.Problems...)
		for j := range sp.Len() {
			name, ce := sp.Name(j), checked[i].detail()
			valid, readable := checked[i].valid, checked[i].readable
			i++
			for path, d := range ce.digests {
				c.sources[path] = d
			}
			prev, hasPrev := effective[name]
			if hasPrev {
				shadowed[name] = append(shadowed[name], configPath(prev))
			}
			if !valid {
				ds := ce.diags
				if readable {
					// Report what else is wrong (unknown skills) in the same run.
					ds = append(ds, ce.resolved.diags...)
				}
				if hasPrev {
					prevPath, path := configPath(prev), sp.ConfigPath(j)
					ds = append(ds, Diagnostic{Severity: Warning, Code: "masked-profile", File: path, Subject: name,
						Message: fmt.Sprintf("invalid profile '%s' hides the same-named profile at %s", name, prevPath),
						Hint:    "fix this definition or remove it to use the broader one",
						Related: []Related{{File: prevPath, Note: "the same-named profile this definition hides"}}})
				}
				broken[name] = append(broken[name], ds...)
				delete(effective, name)
				continue
			}
			c.diags = append(c.diags, ce.diags...)
			if bs := broken[name]; len(bs) > 0 {
				path := sp.ConfigPath(j)
				for _, d := range bs {
					c.diag(maskedDiag(d, path))
				}
			}
			delete(broken, name)
			effective[name] = i - 1
		}
	}
	for _, ds := range broken {
		c.diags = append(c.diags, ds...)
	}
	layout := profiles.LayoutProblems(c.env, trusted)
	c.diags = append(c.diags, layout...)
	c.foundProfiles = first[len(scopes)] > 0 || len(layout) > 0
	names := make([]string, 0, len(effective))
	for n := range effective {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		ce := &checked[effective[n]]
		r := &ce.detail().resolved
		c.diags = append(c.diags, r.diags...)
		for path, d := range r.sources {
			c.sources[path] = d
		}
		if ce.resolvedOK {
			compiled = append(compiled, n)
			if r.p != nil {
				p := *r.p
				p.Overrides = shadowed[n]
				ps = append(ps, p)
			}
		}
	}
	return ps, compiled
}

// maskedDiag turns an error of a definition that the valid nearer
// definition at by replaces into a warning that says so.
func maskedDiag(d Diagnostic, by string) Diagnostic {
	if d.Severity == Error {
		d.Severity = Warning
		d.Message = fmt.Sprintf("%s (in a masked definition: %s is used instead)", d.Message, by)
		d.Related = append(slices.Clone(d.Related), Related{File: by, Note: "the nearer definition used instead"})
	}
	return d
}

// checkedEntry is one validated entry: readable when its config.json
// could be read (even with errors), valid only when it has none. A check
// holds one per profile until precedence is applied, so what most entries
// lack (diagnostics, sources, a launch snapshot) sits behind one pointer,
// nil for a clean profile: 16 bytes an entry instead of 88.
type checkedEntry struct {
	readable bool
	valid    bool
	// resolvedOK says whether the entry resolved as if it were the
	// definition in use.
	resolvedOK bool
	more       *entryDetail
}

// entryDetail is the part of a checkedEntry that a clean entry of a check
// does not have.
type entryDetail struct {
	diags []Diagnostic
	// resolved is the entry resolved as if it were the definition in use:
	// its launch snapshot when valid, only the diagnostics of its skills
	// when not (skillDiags).
	resolved resolved
	// digests are the sources the entry read (config.json, instructions.md).
	digests map[string]string
}

// detail returns the entry's detail, empty when it has none.
func (ce *checkedEntry) detail() *entryDetail {
	if ce.more == nil {
		return &entryDetail{}
	}
	return ce.more
}

// resolved is what resolving one profile gave (whether it resolved is
// checkedEntry.resolvedOK).
type resolved struct {
	p       *manifest.Profile // nil when not resolved, and when diagnosticsOnly
	diags   []Diagnostic
	sources map[string]string
}

// parallelMin is the entry count below which a second schema is not worth
// compiling; loading one costs about as much as validating a few profiles.
const parallelMin = 64

// validateAll reads, validates and resolves entries in parallel and returns
// the results in entry order, so output stays deterministic. Each entry is
// resolved right after it is validated, whether or not a nearer scope
// replaces it, so that its files and parse can be let go of at once rather
// than held for the whole tree: the compile then keeps only what
// precedence and the diagnostics need.
func (c *compilation) validateAll(n int, entry func(i int) profiles.Entry, trusted bool) []checkedEntry {
	out := make([]checkedEntry, n)
	forEachParallel(c.schema, n, c.workers, func(s *cue.Schema, i int) {
		ent := entry(i)
		e := &ent
		profiles.ReadEntry(c.env.Overlay, e)
		v := validator{schema: s}
		cand, valid := v.validateEntry(*e)
		ce := checkedEntry{readable: cand != nil, valid: valid}
		more := entryDetail{diags: v.diags}
		if !c.noDigests && (e.Config != nil || e.Instructions != nil) {
			more.digests = map[string]string{}
			if e.Config != nil {
				more.digests[e.ConfigPath] = manifest.Digest(e.Config)
			}
			if e.Instructions != nil {
				more.digests[e.Instructions.Path] = manifest.Digest(e.Instructions.Content)
			}
		}
		if cand != nil {
			local := &compilation{env: c.env, noDigests: c.noDigests, realPaths: c.realPaths}
			if !c.noDigests {
				local.sources = map[string]string{}
			}
			if valid {
				p, ok := local.resolve(cand, trusted, nil)
				ce.resolvedOK = ok
				more.resolved = resolved{diags: local.diags, sources: local.sources}
				if ok && !c.diagnosticsOnly {
					more.resolved.p = &p
				}
			} else {
				more.resolved.diags = local.skillDiags(cand, trusted)
			}
		}
		if more.diags != nil || more.digests != nil || more.resolved.p != nil || more.resolved.diags != nil || more.resolved.sources != nil {
			ce.more = &more
		}
		out[i] = ce
	})
	return out
}

// forEachParallel calls fn for every index below n on up to limit workers
// (zero means GOMAXPROCS), giving each worker its own schema because a CUE
// context is not safe for concurrent use. first serves the first worker.
func forEachParallel(first *cue.Schema, n, limit int, fn func(s *cue.Schema, i int)) {
	if limit <= 0 {
		limit = runtime.GOMAXPROCS(0)
	}
	workers := min(limit, 8, max(1, n/parallelMin))
	schemas := []*cue.Schema{first}
	for len(schemas) < workers {
		var s *cue.Schema // fn gets none when the caller passed none
		if first != nil {
			var err error
			if s, err = cue.Load(); err != nil {
				break // run with fewer workers
			}
		}
		schemas = append(schemas, s)
	}
	parallel.For(n, len(schemas), func(w, i int) { fn(schemas[w], i) })
}

// validateEntry checks one entry's files and config against the schema and
// the rules the schema cannot express. Every independent problem is
// reported in one run: the rules below also check the fields of a document
// with schema errors, as long as those fields have none. cand is nil when
// the document could not be read at all; valid is false on any error.
func (c *validator) validateEntry(e profiles.Entry) (cand *candidate, valid bool) {
	if e.Invalid() {
		c.diags = append(c.diags, e.Problems...)
		if e.Config == nil {
			return nil, false
		}
		// A bad instructions.md leaves config.json to check in the same run.
	}
	res := c.schema.ValidateJSON(cue.Profile, e.ConfigPath, e.Config)
	bad := map[string]bool{}
	readable := true
	for _, f := range res.Findings {
		d := f.Diagnostic
		d.Subject = e.Name
		c.diag(d)
		bad[f.Field] = true
		switch f.Code {
		case cue.CodeSyntax, cue.CodeEncoding, cue.CodeNotObject:
			readable = false
		}
	}
	if !readable {
		return nil, false
	}
	var cfg profileConfig
	// A document the generated validator accepted is read from its parse
	// (decodeAccepted); anything else is decoded with encoding/json, far
	// faster than CUE. On a document the schema accepted it cannot fail; on
	// one with errors it fills the fields it can, and only fields without
	// findings are used below.
	if !decodeAccepted(res, &cfg) {
		if err := json.Unmarshal(bytes.TrimPrefix(e.Config, []byte("\uFEFF")), &cfg); err != nil {
			var typ *json.UnmarshalTypeError
			if !errors.As(err, &typ) || res.OK() {
				if res.OK() {
					c.diag(Diagnostic{Severity: Error, Code: "invalid-value", File: e.ConfigPath, Subject: e.Name,
						Message: fmt.Sprintf("cannot decode profile: %v", err)})
				}
				return nil, false
			}
		}
	}
	if !res.OK() {
		// Keep only what the schema did not object to.
		for field, reset := range map[string]func(){
			"name": func() { cfg.Name = e.Name }, "model": func() { cfg.Model = "" },
			"instructions": func() { cfg.Instructions = "" }, "skills": func() { cfg.Skills = nil },
		} {
			if bad[field] {
				reset()
			}
		}
		var skills []string
		for i, ref := range cfg.Skills {
			if !bad[fmt.Sprintf("skills.%d", i)] {
				skills = append(skills, ref)
			} else {
				skills = append(skills, "") // keeps indexes, skipped when resolving
			}
		}
		cfg.Skills = skills
	}
	ok := res.OK() && !e.Invalid()
	if cfg.Name != e.Name {
		line, col := res.Position("name")
		c.diag(Diagnostic{Severity: Error, Code: "name-mismatch", File: e.ConfigPath, Line: line, Column: col, Subject: e.Name,
			Message: fmt.Sprintf("name '%s' must match profile entry '%s'", cfg.Name, e.Name),
			Hint:    fmt.Sprintf("set \"name\": %q or rename the %s", e.Name, map[profiles.Form]string{profiles.Directory: "directory", profiles.Legacy: "file"}[e.Form])})
		ok = false
	}
	if n := profiles.UTF16Len(cfg.Instructions); n > profiles.MaxInstructionsChars {
		line, col := res.Position("instructions")
		c.diag(Diagnostic{Severity: Error, Code: "oversized-instructions", File: e.ConfigPath, Line: line, Column: col, Subject: e.Name,
			Message: fmt.Sprintf("instructions exceeds %d characters (it has %d UTF-16 units)", profiles.MaxInstructionsChars, n),
			Hint:    "shorten the text; instructions.md has the same limit"})
		ok = false
	}
	if m := cfg.Model; m != "" {
		provider, model, found := strings.Cut(m, "/")
		if !found || strings.TrimSpace(provider) == "" || strings.TrimSpace(model) == "" {
			line, col := res.Position("model")
			c.diag(Diagnostic{Severity: Warning, Code: "model-format", File: e.ConfigPath, Line: line, Column: col, Subject: e.Name,
				Message: fmt.Sprintf("model '%s' is not in provider/model form; Pi will refuse it at launch", m),
				Hint:    "write the provider and the model id, e.g. \"anthropic/claude-sonnet-4-5\""})
		}
	}
	if _, suffix := splitThinkingSuffix(cfg.Model); suffix != "" && knownThinkingLevel(cfg.ThinkingLevel) != "" && cfg.ThinkingLevel != suffix {
		line, col := res.Position("thinkingLevel")
		c.diag(Diagnostic{Severity: Info, Code: "thinking-level", File: e.ConfigPath, Line: line, Column: col, Subject: e.Name,
			Message: fmt.Sprintf("thinkingLevel '%s' wins over the model's ':%s', as pi --thinking wins over a --model suffix", cfg.ThinkingLevel, suffix),
			Hint:    "drop one of the two so the profile says one level"})
	}
	if t := cfg.ThinkingLevel; t != "" && !bad["thinkingLevel"] && !slices.Contains(roleEnums["thinking"], t) {
		// The launch snapshot leaves it out (resolve): Pi's two ways of
		// taking an unknown level differ (--thinking ignores it, a Main's
		// setThinkingLevel clamps it to off), so neither is used.
		line, col := res.Position("thinkingLevel")
		hint := "use one of " + strings.Join(roleEnums["thinking"], ", ")
		if lower := strings.ToLower(strings.TrimSpace(t)); slices.Contains(roleEnums["thinking"], lower) {
			hint = fmt.Sprintf("write %q", lower)
		} else if near := cue.Nearest(lower, roleEnums["thinking"]); near != "" {
			hint = fmt.Sprintf("did you mean %q? Pi's levels are %s", near, strings.Join(roleEnums["thinking"], ", "))
		}
		c.diag(Diagnostic{Severity: Warning, Code: "thinking-level", File: e.ConfigPath, Line: line, Column: col, Subject: e.Name,
			Message: fmt.Sprintf("thinkingLevel '%s' is not a level Pi knows; facets leaves it out, so pi --profile and a Sub of this profile both run at Pi's default thinking level", t),
			Hint:    hint})
	}
	if placeholder(cfg.Description) && cfg.Invocation != "manual" && !bad["description"] {
		// A manual profile's description is only shown to the user; an
		// agent-invokable one's is how Main's model picks it.
		line, col := res.Position("description")
		c.diag(Diagnostic{Severity: Warning, Code: "placeholder-description", File: e.ConfigPath, Line: line, Column: col, Subject: e.Name,
			Message: fmt.Sprintf("description %q is a placeholder, and Main's model reads it in the delegation catalog to decide when to delegate here", cfg.Description),
			Hint:    `say in one sentence what the profile is for, or set "invocation": "manual" until you do`})
	}
	if mo := manifest.MainOnlyTools(cfg.Tools); len(mo) > 0 && !bad["tools"] {
		line, col := res.Position("tools")
		d := Diagnostic{Severity: Error, Code: "main-only-tool", File: e.ConfigPath, Line: line, Column: col, Subject: e.Name,
			Message: fmt.Sprintf("tools %s exist only in a Main Pi; a Sub (delegate or /sub:%s) has its profile's tools plus talk and cannot start with them", strings.Join(mo, ", "), e.Name),
			Hint:    `remove them, or set "invocation": "manual" if the profile is for starting a Main with pi --profile ` + e.Name}
		if cfg.Invocation == "manual" {
			// pi --profile starts a Main, which has them; only /sub: fails.
			d.Severity = Warning
			d.Message = fmt.Sprintf("tools %s exist only in a Main Pi: pi --profile %s works, /sub:%s (a Sub: its profile's tools plus talk) cannot start", strings.Join(mo, ", "), e.Name, e.Name)
			d.Hint = "remove them if the profile is meant for /sub:" + e.Name
		} else {
			ok = false
		}
		c.diag(d)
	}
	return &candidate{entry: e, config: cfg, result: res}, ok
}

// placeholder reports a description that still is the TODO facets new
// scaffolds (or any other TODO/FIXME/TBD note in place of one).
func placeholder(desc string) bool {
	d := strings.ToUpper(strings.TrimSpace(desc))
	for _, p := range []string{"TODO", "FIXME", "TBD"} {
		if rest, ok := strings.CutPrefix(d, p); ok && (rest == "" || !unicode.IsLetter(rune(rest[0]))) {
			return true
		}
	}
	return false
}

// splitThinkingSuffix splits Pi's "provider/id:level" (pi --model accepts a
// thinking level after the id) into the model and the level, so a Main's
// profile (which looks the model up by provider and id) and a Sub's
// (--model, --thinking) start alike: thinkingLevel, when set, wins over the
// suffix, as --thinking wins over it in Pi. A suffix that is not one of
// Pi's levels is part of the id.
func splitThinkingSuffix(model string) (string, string) {
	i := strings.LastIndexByte(model, ':')
	if i < 0 || !strings.Contains(model[:i], "/") {
		return model, ""
	}
	if level := model[i+1:]; slices.Contains(roleEnums["thinking"], level) {
		return model[:i], level
	}
	return model, ""
}

// knownThinkingLevel is level when Pi knows it, else "": an unknown level
// is not passed to Pi at all (see the thinking-level warning).
func knownThinkingLevel(level string) string {
	if slices.Contains(roleEnums["thinking"], level) {
		return level
	}
	return ""
}

// resolve builds the launch snapshot of an effective profile.
func (c *compilation) resolve(cand *candidate, trusted bool, overrides []string) (manifest.Profile, bool) {
	e, cfg := cand.entry, cand.config
	model, suffix := splitThinkingSuffix(cfg.Model)
	thinking := knownThinkingLevel(cfg.ThinkingLevel)
	if thinking == "" {
		thinking = suffix
	}
	launch := manifest.Launch{
		Model:              model,
		ThinkingLevel:      thinking,
		Tools:              dedupe(cfg.Tools),
		SkillRefs:          dedupe(cfg.Skills),
		Extensions:         []string{},
		SessionPersistence: or(cfg.SessionPersistence, "ephemeral"),
		Invocation:         or(cfg.Invocation, "both"),
	}
	if cfg.Workspace == manifest.WorkspaceWorktree {
		launch.Workspace = manifest.WorkspaceWorktree
	}
	switch {
	case e.Instructions != nil:
		launch.Instructions = string(e.Instructions.Content)
		launch.InstructionsSource = e.Instructions.Path
	case cfg.Instructions != "":
		launch.Instructions = cfg.Instructions
		launch.InstructionsSource = e.ConfigPath
	}
	if launch.Instructions != "" && !c.noDigests {
		launch.InstructionsSHA256 = manifest.Digest([]byte(launch.Instructions))
	}

	ok := true
	var skills []string
	if e.Form == profiles.Directory {
		private, probs := profiles.PrivateSkills(e.Dir, e.Name, c.realPaths)
		c.diags = append(c.diags, probs...)
		ok = len(probs) == 0
		skills = append(skills, private...)
	}
	explicit, ds := c.resolveSkills(cand, trusted)
	c.diags = append(c.diags, ds...)
	skills = append(skills, explicit...)
	if !ok || len(ds) > 0 {
		return manifest.Profile{}, false
	}
	launch.Skills = profiles.DedupeByRealPath(skills)
	if launch.Skills == nil {
		launch.Skills = []string{}
	}
	for _, s := range launch.Skills {
		if !c.noDigests {
			c.readSource(s)
		}
	}
	p := manifest.Profile{
		Name:           e.Name,
		Description:    cfg.Description,
		Scope:          string(e.Scope),
		Form:           string(e.Form),
		SourcePath:     e.ConfigPath,
		AgentInvokable: launch.Invocation != "manual",
		Overrides:      overrides,
		Launch:         launch,
	}
	if !c.noDigests {
		p.SourceSHA256 = manifest.Digest(e.Config)
	}
	return p, true
}

// resolveSkills resolves a profile's explicit skills entries and reports
// each one that is not found; empty entries (which had schema errors) are
// skipped.
func (c *compilation) resolveSkills(cand *candidate, trusted bool) (paths []string, diags []Diagnostic) {
	e := cand.entry
	for i, ref := range cand.config.Skills {
		if ref == "" {
			continue
		}
		p, found := profiles.ResolveSkill(ref, e.Dir, c.env, trusted)
		if !found {
			line, col := cand.result.Position(fmt.Sprintf("skills.%d", i))
			hint := "install the skill in <agentDir>/skills or ~/.agents/skills, or use a path relative to the profile"
			switch {
			case c.env.ProjectOnly:
				hint = "a repository check (--project-only) reads no personal skills: commit the skill in .pi/skills or .agents/skills of the repository, or use a path relative to the profile"
			case profiles.IsNamedSkill(ref) && !trusted:
				hint = "project skills are only searched when the project is trusted; " + hint
			}
			diags = append(diags, Diagnostic{Severity: Error, Code: "unknown-skill", File: e.ConfigPath, Line: line, Column: col, Subject: e.Name,
				Message: fmt.Sprintf("Profile '%s' references unknown skill '%s'.", e.Name, ref), Hint: hint})
			continue
		}
		paths = append(paths, p)
	}
	return paths, diags
}

// skillDiags reports the unknown skills of a profile that is invalid for
// other reasons, so all of its problems show in one run.
func (c *compilation) skillDiags(cand *candidate, trusted bool) []Diagnostic {
	_, ds := c.resolveSkills(cand, trusted)
	return ds
}

func (c *compilation) mainSections(trusted bool) []manifest.MainSection {
	files, probs := profiles.MainFiles(c.env, trusted)
	c.diags = append(c.diags, probs...)
	var out []manifest.MainSection
	for _, f := range files {
		var d string
		if !c.noDigests {
			d = manifest.Digest(f.Raw)
			c.sources[f.Path] = d
		}
		out = append(out, manifest.MainSection{Path: f.Path, Scope: string(f.Scope), SHA256: d, Content: f.Content})
	}
	return out
}

// selectNames keeps the requested profiles and their diagnostics; compiled
// names every profile that compiled (ps is empty when only diagnostics
// are wanted). A name that did not compile reports its own diagnostics, or
// an unknown-profile error listing what is available.
func selectNames(ps []manifest.Profile, compiled []string, ds []Diagnostic, names []string) ([]manifest.Profile, []Diagnostic) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []manifest.Profile
	for _, p := range ps {
		if want[p.Name] {
			out = append(out, p)
		}
	}
	have := map[string]bool{}
	for _, n := range compiled {
		if want[n] {
			have[n] = true
		}
	}
	var keep []Diagnostic
	for _, d := range ds {
		if d.Subject != "" && want[d.Subject] {
			keep = append(keep, d)
		}
	}
	for _, n := range names {
		if have[n] || slices.ContainsFunc(keep, func(d Diagnostic) bool { return d.Subject == n && d.Severity == Error }) {
			continue
		}
		avail := make([]manifest.Profile, len(compiled))
		for i, c := range compiled {
			avail[i].Name = c
		}
		keep = append(keep, Diagnostic{Severity: Error, Code: "unknown-profile", Subject: n,
			Message: manifest.UnknownProfileMessage(n, avail),
			Hint:    "check the name, the working directory and project trust"})
	}
	return out, keep
}

func dedupe(xs []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

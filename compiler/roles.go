package compiler

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/profiles"
)

// RoleInput says where compileRoles finds role definitions.
type RoleInput struct {
	BundledDir string           // host package's agents/ dir (--bundled-roles); empty means none
	Packs      []string         // registered role-pack paths (--role-pack, FACETS_ROLE_PACKS), in order
	AgentDir   string           // Pi's agent dir; global roles live in <AgentDir>/agents
	Cwd        string           // project roles live in <Cwd>/.pi/agents
	Trusted    bool             // an untrusted project contributes no roles
	Workers    int              // bounds parallel validation; zero means GOMAXPROCS
	NoDigests  bool             // leave SHA256 and the sources empty (check discards them)
	Overlay    profiles.Overlay // unsaved contents read instead of the files (see profiles.Env.Overlay)
	// DiagnosticsOnly returns roles that carry only their names (see
	// Options.DiagnosticsOnly).
	DiagnosticsOnly bool
}

// roleKeys are the frontmatter keys of #Role, in the order checked against
// pi-herdr-agents' line parser. TestRoleKeysMatchSchema keeps it in sync.
var roleKeys = []string{
	"name", "description", "model", "thinking", "tools", "skills", "skill", "deny-tools",
	"spawning", "auto-exit", "interactive", "persistent", "system-prompt", "session-mode",
	"cwd", "disable-model-invocation",
}

// capabilityKeys follow the strict rules of the kazedayo/pi-herdr-agents
// fork: one unindented, unquoted declaration, or the role is unavailable.
var capabilityKeys = []string{"tools", "deny-tools", "spawning", "persistent"}

// roleEnums are the enum keys whose unsupported values pi-herdr-agents
// drops silently, loading the role without the field.
var roleEnums = map[string][]string{
	"thinking":      {"off", "minimal", "low", "medium", "high", "xhigh", "max"},
	"system-prompt": {"append", "replace"},
	"session-mode":  {"standalone", "lineage-only", "fork"},
}

// roleLooseBools are the boolean keys pi-herdr-agents reads as "exactly
// true" (disable-model-invocation: true in any case) and false otherwise.
// spawning and persistent are not here: pi-herdr-agents' capability rule
// makes any other value invalid.
var roleLooseBools = map[string]func(line string) bool{
	"auto-exit":                func(l string) bool { return l == "true" },
	"interactive":              func(l string) bool { return l == "true" },
	"disable-model-invocation": func(l string) bool { return strings.EqualFold(l, "true") },
}

// lenientValue says what pi-herdr-agents makes of a key whose YAML value
// facets cannot use, judged by its line reading: drop=true means the role
// loads without the field; otherwise value is the boolean it reads. ok is
// false when pi-herdr-agents would not accept the role either way (or would
// read a usable value YAML does not see), so the finding stays an error.
func lenientValue(yaml []byte, key string) (value any, drop, ok bool) {
	line, n, lineOK := profiles.FrontmatterLine(yaml, key)
	if n > 0 && !lineOK && !slices.Contains(capabilityKeys, key) {
		return nil, true, true // an empty value counts as absent
	}
	if !lineOK {
		return nil, false, false
	}
	if enum, isEnum := roleEnums[key]; isEnum {
		return nil, true, !slices.Contains(enum, line)
	}
	if read, isBool := roleLooseBools[key]; isBool {
		return read(line), false, true
	}
	return nil, false, false
}

// lenientDiag is the warning for a value facets, like pi-herdr-agents,
// ignores or reads as false instead of rejecting the whole role.
func lenientDiag(path string, line, col int, key, why, hint string, value any, drop bool) Diagnostic {
	what := fmt.Sprintf("pi-herdr-agents ignores it, so the role is loaded without %s", key)
	if !drop {
		what = fmt.Sprintf("pi-herdr-agents reads it as %v, so the role is loaded with %s: %v", value, key, value)
	}
	return Diagnostic{Severity: Warning, Code: "ignored-role-value", File: path, Line: line, Column: col,
		Message: why + "; " + what, Hint: hint}
}

// roleDef is one role file after parsing and validation. A check holds
// one per role file until the layers are applied, so it keeps the file's
// index in the listing rather than the file.
type roleDef struct {
	file int // the file's index in the listing (profiles.RoleList.File)
	name string
	// role is the manifest entry of a valid file; nil for an invalid one
	// and when only diagnostics are wanted (roleParser.diagnosticsOnly).
	role *manifest.Role
	// valid is false when the file has errors; at bundled, global and
	// project level it then removes the name from lower layers, so an
	// invalid definition never silently falls back.
	valid bool
	// ignored files contribute nothing at all (no frontmatter outside
	// packs, as in pi-herdr-agents).
	ignored bool
	// contributes is set for a pack file that passes pi-herdr-agents' own
	// per-file checks (read, cli, frontmatter, name and stem, description):
	// it offers its name to the package layer, so two such files disable
	// the name (duplicate-package-role) even when facets finds one of them
	// invalid for another reason.
	contributes bool
}

// compileRoles discovers, validates and layers role definitions. It
// returns the effective roles sorted by name (none with DiagnosticsOnly)
// and their number, the diagnostics, and the digest of every role file
// and package.json read.
func compileRoles(schema *cue.Schema, in RoleInput) (roles []manifest.Role, effective int, diags []Diagnostic, sources []manifest.Source) {
	// Each file is read, parsed and let go of by one worker, so the
	// files of a large tree are never all in memory at once.
	found, problems := profiles.ListRoles(profiles.RoleSources{BundledDir: in.BundledDir, Packs: in.Packs,
		AgentDir: in.AgentDir, Cwd: in.Cwd, Trusted: in.Trusted, Overlay: in.Overlay})
	diags = append(diags, problems...)
	defs := make([]roleDef, found.Len())
	fileDiags := make([][]Diagnostic, found.Len())
	var digests []string
	if !in.NoDigests {
		digests = make([]string, found.Len())
	}
	forEachParallel(schema, found.Len(), in.Workers, func(s *cue.Schema, i int) {
		f := found.File(i)
		data, readProblem := profiles.ReadRole(in.Overlay, f)
		f.Data = data
		p := roleParser{schema: s, diagnosticsOnly: in.DiagnosticsOnly}
		defs[i], fileDiags[i] = p.parse(&f)
		defs[i].file = i
		if readProblem != nil {
			fileDiags[i] = append([]Diagnostic{*readProblem}, fileDiags[i]...)
		}
		if data != nil && digests != nil {
			digests[i] = manifest.Digest(data)
			if defs[i].role != nil {
				defs[i].role.SHA256 = digests[i]
			}
		}
	})
	for i := range defs {
		if digests != nil && digests[i] != "" {
			sources = append(sources, manifest.Source{Path: found.File(i).Path, SHA256: digests[i]})
		}
		diags = append(diags, fileDiags[i]...)
	}
	for _, pkg := range found.Packages {
		if !in.NoDigests {
			sources = append(sources, manifest.Source{Path: pkg.Path, SHA256: manifest.Digest(pkg.Data)})
		}
	}
	roles, effective, layerDiags := layerRoles(&found, defs)
	diags = append(diags, layerDiags...)
	slices.SortFunc(sources, func(a, b manifest.Source) int { return strings.Compare(a.Path, b.Path) })
	sources = slices.Compact(sources)
	return roles, effective, SortDiagnostics(diags), sources
}

type roleParser struct {
	schema *cue.Schema
	// diagnosticsOnly leaves out the manifest entry (roleDef.role), which
	// only the diagnostics' caller would discard.
	diagnosticsOnly bool
}

// parse validates one role file. Checks run in pi-herdr-agents' order (read,
// cli, frontmatter, then fields), but all field problems of a file are
// reported in the same run. Every diagnostic names the role the file
// defines, so an exact-name lookup finds it.
func (p *roleParser) parse(f *profiles.RoleFile) (roleDef, []Diagnostic) {
	def, diags := p.parseFile(f)
	for i := range diags {
		diags[i].Subject = def.name
	}
	slices.SortStableFunc(diags, func(a, b Diagnostic) int { return cmp.Or(a.Line-b.Line, a.Column-b.Column) })
	return def, diags
}

func (p *roleParser) parseFile(f *profiles.RoleFile) (roleDef, []Diagnostic) {
	def := roleDef{name: f.Stem}
	if f.Data == nil {
		return def, nil // discovery reported why
	}
	pack := f.Layer == profiles.LayerPackage
	var diags []Diagnostic
	add := func(sev Severity, code string, line, col int, msg, hint string) {
		diags = append(diags, Diagnostic{Severity: sev, Code: code, File: f.Path, Line: line, Column: col,
			Message: msg, Hint: hint})
	}
	data := f.Data
	encodingOK := true
	if bytes.HasPrefix(data, []byte("\uFEFF")) || bytes.HasPrefix(data, []byte("---\r\n")) {
		// Parse a normalised copy so the file's other problems and its name
		// are still reported, but never accept it: pi-herdr-agents would
		// not see its frontmatter.
		encodingOK = false
		add(Error, "unsupported-line-endings", 1, 1,
			fmt.Sprintf("Role definition %s uses CRLF line endings or a UTF-8 BOM: pi-herdr-agents cannot parse CRLF/BOM frontmatter; convert to LF without BOM", f.Path),
			"save the file with LF line endings and no byte-order mark")
		data = bytes.TrimPrefix(data, []byte("\uFEFF"))
		data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	}
	yaml, start, body, ok := profiles.SplitFrontmatter(data)
	if !ok {
		if pack {
			add(Error, "invalid-role-definition", 1, 1, fmt.Sprintf("Role definition must start with frontmatter: %s", f.Path),
				"start the file with a --- line, key: value lines, and a closing --- line")
			return def, diags
		}
		if encodingOK {
			def.ignored = true
		}
		add(Warning, "missing-frontmatter", 1, 1, fmt.Sprintf("Role definition has no frontmatter and is ignored: %s", f.Path),
			"start the file with a --- line, key: value lines, and a closing --- line")
		return def, diags
	}
	lineName, nameLine, ok := profiles.FrontmatterLine(yaml, "name")
	if ok {
		def.name = lineName // pi-herdr-agents names a legacy-cli role this way in every layer
	}
	if cli, line, ok := profiles.FrontmatterLine(yaml, "cli"); ok {
		add(Error, "external-cli-unsupported", start+line-1, 1,
			fmt.Sprintf("Role %q requests external CLI %q in %s. pi-herdr-agents is Pi-only; remove the cli and cli-model fields and select Claude through an authenticated Pi provider/model ID.", def.name, cli, f.Path),
			"remove the cli and cli-model lines")
		return def, diags
	}

	fields, fieldDiags, badFields, lenient := p.fields(f.Path, yaml, start)
	if pack {
		def.name = f.Stem // the stem is canonical for packs
	} else if n, ok := fields["name"].(string); ok && n != f.Stem {
		def.name = strings.Clone(n) // not the frontmatter's copy, which def would keep alive
	} else if ok {
		def.name = f.Stem // the listing's string, shared rather than copied
	}
	diags = append(diags, fieldDiags...)
	valid := encodingOK && !HasErrors(fieldDiags)
	if fields != nil {
		skip := maps.Clone(lenient)
		maps.Copy(skip, badFields) // a key with an error is reported as that
		ds := lineReadingDiags(f.Path, def.name, yaml, start, fields, skip)
		valid = valid && !HasErrors(ds)
		diags = append(diags, ds...)
		diags = append(diags, claudeToolDiags(f.Path, def.name, yaml, start)...)
	}
	if !utf8.ValidString(body) {
		valid = false
		add(Error, "invalid-role-encoding", 0, 0, fmt.Sprintf("Role body in %s is not valid UTF-8", f.Path), "save the file as UTF-8")
	}

	name, hasName := fields["name"].(string)
	desc, _ := fields["description"].(string)
	piRejects := false // a check pi-herdr-agents itself makes failed
	nameCol := 0
	if nameLine > 0 {
		nameLine, nameCol = nameLine+start-1, 1
	}
	switch {
	case pack && hasName && name != f.Stem:
		valid, piRejects = false, true
		add(Error, "role-name-mismatch", nameLine, nameCol, fmt.Sprintf("Role name %q must match filename %q in %s", name, f.Stem, f.Path),
			fmt.Sprintf("rename the file to %s.md or set name: %s", name, f.Stem))
	case !pack && hasName && name != f.Stem:
		add(Warning, "role-name-differs", nameLine, nameCol,
			fmt.Sprintf("Role name %q differs from filename %q in %s; the role is listed as %q", name, f.Stem, f.Path, name),
			fmt.Sprintf("rename the file to %s.md so the file name is the role name", name))
	}
	if pack && fields != nil && strings.TrimSpace(desc) == "" && !badFields["description"] {
		valid, piRejects = false, true
		add(Error, "missing-role-description", 0, 0, fmt.Sprintf("Role %q must declare a description in %s", def.name, f.Path),
			"add description: <one sentence> to the frontmatter")
	}
	def.valid = valid
	def.contributes = encodingOK && !piRejects
	if valid && !p.diagnosticsOnly {
		r := buildRole(f, def.name, fields, body)
		def.role = &r
	}
	return def, diags
}

// fields validates the frontmatter against #Role and, when it has no
// errors, decodes it; bad names the top-level keys with errors. Unknown
// keys are warnings (pi-herdr-agents ignores them), so a document whose
// only findings are unknown keys is decoded too. So are values
// pi-herdr-agents drops or reads as false (lenientValue): the role keeps
// working there, so here it loads with the same reading and a warning;
// lenient names those keys.
func (p *roleParser) fields(path string, yaml []byte, start int) (fields map[string]any, diags []Diagnostic, bad, lenient map[string]bool) {
	bad, lenient = map[string]bool{}, map[string]bool{}
	if blankYAML(yaml) {
		return map[string]any{}, nil, bad, lenient // an empty block is an empty mapping
	}
	adjust := map[string]any{} // key -> the value pi-herdr-agents reads; nil drops the key
	res := p.schema.ValidateFrontmatter(cue.Role, path, quoteColonValues(yaml), start)
	// A duplicated key has only its duplicate-key finding (package cue
	// leaves it out of the value pass), so no value finding is about one.
	for _, fd := range res.Findings {
		d := fd.Diagnostic
		top, _, _ := strings.Cut(fd.Field, ".")
		if fd.Code == cue.CodeInvalidValue {
			if v, drop, ok := lenientValue(yaml, top); ok {
				lenient[top] = true
				adjust[top] = v
				diags = append(diags, lenientDiag(fd.File, fd.Line, fd.Column, top, fd.Message, fd.Hint, v, drop))
				continue
			}
		}
		if fd.Code == cue.CodeSyntax && strings.Contains(d.Message, "mapping values are not allowed") {
			d = colonValueSyntax(d, yaml, start)
		}
		if top == "model" && fd.Code == cue.CodeInvalidValue {
			d.Hint = claudeModelHint(yaml, d.Hint)
		}
		if fd.Code == cue.CodeUnknownField {
			d.Severity = Warning // pi-herdr-agents ignores unknown keys
		} else {
			bad[top] = true
		}
		diags = append(diags, d)
	}
	if HasErrors(diags) {
		// What YAML read is still compared with pi-herdr-agents' reading
		// (lineReadingDiags, for the keys without errors), so a file's
		// divergences are reported with its other errors, not after them.
		var m map[string]any
		if res.Decode(&m) == nil {
			return m, diags, bad, lenient
		}
		return nil, diags, bad, lenient
	}
	if !res.OK() && len(res.Findings) == 0 {
		// The schema rejected the document without saying where.
		diags = append(diags, Diagnostic{Severity: Error, Code: cue.CodeInvalidValue, File: path, Line: start, Column: 1,
			Message: "frontmatter does not satisfy the role schema", Hint: "run facets schema --cue to see the allowed values"})
		return nil, diags, bad, lenient
	}
	var m map[string]any
	if err := res.Decode(&m); err != nil {
		// Unreachable once the document parsed; reported rather than
		// trusted, so a decoder disagreement cannot pass silently.
		diags = append(diags, Diagnostic{Severity: Error, Code: cue.CodeSyntax, File: path, Line: start, Column: 1,
			Message: fmt.Sprintf("cannot decode frontmatter: %v", err), Hint: "simplify the frontmatter to key: value lines"})
		return nil, diags, bad, lenient
	}
	for k, v := range adjust {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m, diags, bad, lenient
}

// quoteColonValues returns yaml with each unindented one-line plain value
// that holds ": " (or ends in ":") written as a double-quoted scalar: YAML
// cannot read such a line ("mapping values are not allowed"), and
// pi-herdr-agents reads the rest of the line as the value
// (description: Plans work. Use when: the task is large), so the role is
// read as pi-herdr-agents reads it. A value that starts with a quote, a
// flow or block indicator, or that holds " #" (which YAML and
// pi-herdr-agents read differently) is left as it is, for the divergence
// checks. yaml itself is returned when nothing changes.
func quoteColonValues(yaml []byte) []byte {
	var out []byte // nil until a line changes: a role file rarely has one
	copied := 0    // yaml[:copied] is in out
	for off := 0; off < len(yaml); {
		end := bytes.IndexByte(yaml[off:], '\n')
		if end < 0 {
			end = len(yaml)
		} else {
			end += off
		}
		if q, ok := quotedColonLine(yaml[off:end]); ok {
			out = append(append(out, yaml[copied:off]...), q...)
			copied = end
		}
		off = end + 1
	}
	if out == nil {
		return yaml
	}
	return append(out, yaml[copied:]...)
}

// quotedColonLine is line (key: value) with its value double-quoted, when
// quoteColonValues quotes it.
func quotedColonLine(line []byte) ([]byte, bool) {
	key, v, ok := bytes.Cut(line, []byte(": "))
	if !ok {
		return nil, false
	}
	v = bytes.TrimSpace(v)
	if !bytes.Contains(v, []byte(": ")) && !bytes.HasSuffix(v, []byte(":")) {
		return nil, false // the usual line: one key, one plain value
	}
	if len(key) == 0 || !plainKey(string(key)) || bytes.ContainsAny(v[:1], "\"'[{|>&*!%@`#") || bytes.Contains(v, []byte(" #")) {
		return nil, false
	}
	var b bytes.Buffer
	b.Write(key)
	b.WriteString(": ")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(string(v)) != nil {
		return nil, false
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), true
}

// colonValueSyntax points YAML's "mapping values are not allowed" at the
// ": " inside the value of its line (YAML reports the line's start) and
// says how to write the value so both YAML and pi-herdr-agents read it.
func colonValueSyntax(d Diagnostic, yaml []byte, start int) Diagnostic {
	lines := strings.Split(string(yaml), "\n")
	i := d.Line - start
	if i < 0 || i >= len(lines) {
		return d
	}
	key, v, ok := strings.Cut(lines[i], ": ")
	if !ok {
		return d
	}
	if j := strings.Index(v, ": "); j >= 0 {
		d.Column = len(key) + 2 + j + 1
		d.Hint = fmt.Sprintf("the value of %s holds \": \"; write it on one line without a \" #\" comment, or quote the whole value: %s: \"...\"", key, key)
	}
	return d
}

// claudeOnlyTools are Claude Code tools Pi has no counterpart for.
var claudeOnlyTools = []string{"WebFetch", "WebSearch", "Task", "TodoWrite", "NotebookEdit", "NotebookRead", "BashOutput", "KillShell", "SlashCommand", "ExitPlanMode"}

// claudeToolDiags warns about Claude Code tool names in a role's tools and
// deny-tools (a file brought over by hand): Pi has no tool Read, and would
// start the Sub without it.
func claudeToolDiags(path, name string, yaml []byte, start int) []Diagnostic {
	var diags []Diagnostic
	for _, key := range []string{"tools", "deny-tools"} {
		v, line, ok := profiles.FrontmatterLine(yaml, key)
		if !ok {
			continue
		}
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			_, claude := profiles.ClaudeTools[t]
			if !claude && !slices.Contains(claudeOnlyTools, t) {
				continue // the usual role: nothing to say, no line to find
			}
			raw := strings.Split(string(yaml), "\n")[line-1]
			col := strings.Index(raw, t) + 1
			if pi, ok := profiles.ClaudeTools[t]; ok {
				diags = append(diags, Diagnostic{Severity: Warning, Code: "claude-tool-name", File: path, Line: start + line - 1, Column: col, Subject: name,
					Message: fmt.Sprintf("Role %q lists %s, Claude Code's name for Pi's %s tool; Pi has no tool %s", name, t, pi, t),
					Hint:    fmt.Sprintf("write %s (facets import claude maps Claude Code agents)", pi)})
			} else if slices.Contains(claudeOnlyTools, t) {
				diags = append(diags, Diagnostic{Severity: Warning, Code: "claude-tool-name", File: path, Line: start + line - 1, Column: col, Subject: name,
					Message: fmt.Sprintf("Role %q lists %s, a Claude Code tool Pi does not have", name, t),
					Hint:    "remove it from " + key})
			}
		}
	}
	return diags
}

// claudeModelHint is the hint for a role model that is not provider/id:
// Claude Code's inherit and aliases get their own.
func claudeModelHint(yaml []byte, hint string) string {
	v, _, _ := profiles.FrontmatterLine(yaml, "model")
	switch v {
	case "inherit":
		return "inherit is Claude Code's: drop the model line (a role without a model runs on the Main's default model)"
	case "sonnet", "opus", "haiku":
		return fmt.Sprintf("%s is Claude Code's alias: write the Pi provider/id, e.g. anthropic/claude-%s-4 (facets import claude --model-map maps aliases)", v, v)
	}
	return hint
}

// plainKey reports whether k is a frontmatter key pi-herdr-agents reads:
// unindented letters, digits, '-' and '_'.
func plainKey(k string) bool {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// blankYAML reports whether yaml has only blank and comment lines.
func blankYAML(yaml []byte) bool {
	for _, l := range strings.Split(string(yaml), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// lineReadingDiags compares the YAML reading of every known key with the
// reading of pi-herdr-agents' line parser (first column-0 "key:" line,
// trimmed, quotes and comments kept). Where they differ, a role would
// behave differently under pi-herdr-agents than the manifest says: an
// error, except for description, which is only displayed.
//
// Where YAML reads a usable value but pi-herdr-agents drops the line or
// reads false (thinking: high # note, auto-exit: True), fields takes
// pi-herdr-agents' reading and the difference is a warning; lenient keys
// were settled that way already.
func lineReadingDiags(path, name string, yaml []byte, start int, fields map[string]any, lenient map[string]bool) []Diagnostic {
	var diags []Diagnostic
	for _, key := range roleKeys {
		if lenient[key] {
			continue
		}
		capability := slices.Contains(capabilityKeys, key)
		code, sev := "frontmatter-divergence", Error
		if capability {
			code = "invalid-capability-declaration"
		} else if key == "description" {
			sev = Warning
		}
		bad := func(line int, why, hint string) {
			diags = append(diags, Diagnostic{Severity: sev, Code: code, File: path, Line: start + line - 1, Column: 1,
				Message: fmt.Sprintf("Role %q has an ambiguous %s declaration in %s: %s", name, key, path, why),
				Hint:    hint, Subject: name})
		}
		lineVal, line, lineOK := profiles.FrontmatterLine(yaml, key)
		if capability {
			if decl := profiles.KeyLines(yaml, key); len(decl) > 1 || (len(decl) == 1 && decl[0] != line) {
				bad(decl[len(decl)-1], key+" must be declared once, unindented, as key: value at the start of a line",
					fmt.Sprintf("write a single line %s: ... at column 1", key))
				continue
			}
		}
		v, yamlOK := fields[key]
		if !yamlOK && !lineOK {
			continue
		}
		want := ""
		switch x := v.(type) {
		case string:
			want = x
		case bool:
			want = fmt.Sprint(x)
		}
		same := lineOK && yamlOK && lineVal == want
		if key == "disable-model-invocation" && yamlOK && lineOK {
			same = strings.EqualFold(lineVal, "true") == (want == "true")
		}
		if same {
			continue
		}
		if line == 0 {
			line = 1
		}
		switch {
		case !lineOK:
			bad(line, fmt.Sprintf("YAML reads %s but pi-herdr-agents does not see the key", diag.Quote(want)),
				fmt.Sprintf("write %s: value on one line at column 1", key))
		case !yamlOK:
			bad(line, fmt.Sprintf("pi-herdr-agents reads %s but YAML does not see the key", diag.Quote(lineVal)),
				"close quotes and flow collections on the line where they start")
		default:
			why := fmt.Sprintf("Role %q: pi-herdr-agents reads %s as %s but YAML reads %s", name, key, diag.Quote(lineVal), diag.Quote(want))
			hint := "write the value plain on one line: no quotes, block scalars or # comments"
			if v, drop, ok := lenientValue(yaml, key); ok {
				if drop {
					delete(fields, key)
					hint = "write one supported value plain on the line: no quotes or # comments"
				} else {
					fields[key] = v
					hint = "write exactly true or false"
				}
				d := lenientDiag(path, start+line-1, 1, key, why, hint, v, drop)
				d.Subject = name
				diags = append(diags, d)
				continue
			}
			bad(line, fmt.Sprintf("pi-herdr-agents reads %s but YAML reads %s", diag.Quote(lineVal), diag.Quote(want)), hint)
		}
	}
	return diags
}

// buildRole turns validated fields into a manifest entry.
func buildRole(f *profiles.RoleFile, name string, fields map[string]any, body string) manifest.Role {
	str := func(k string) string { s, _ := fields[k].(string); return s }
	flag := func(k string) *bool {
		if b, ok := fields[k].(bool); ok {
			return &b
		}
		return nil
	}
	skills := str("skills")
	if _, ok := fields["skills"]; !ok {
		skills = str("skill") // the singular is read only when skills is absent
	}
	r := manifest.Role{
		Name: name, Layer: f.Layer, Path: f.Path, // SHA256: set by compileRoles
		Provider: f.Provider, ProviderVersion: f.ProviderVersion,
		Description: str("description"), Model: str("model"), Thinking: str("thinking"),
		Tools: commaList(str("tools")), DenyTools: commaList(str("deny-tools")), Skills: commaList(skills),
		Spawning: flag("spawning"), AutoExit: flag("auto-exit"), Interactive: flag("interactive"),
		Persistent: flag("persistent"), SystemPrompt: str("system-prompt"), SessionMode: str("session-mode"),
		Cwd: str("cwd"), Body: body,
	}
	if b := flag("disable-model-invocation"); b != nil {
		r.DisableModelInvocation = *b
	}
	return r
}

// commaList splits a comma-separated scalar into trimmed, non-empty items.
func commaList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// layerRoles applies pi-herdr-agents' collection order (bundled, packs,
// global, project; later layers win) and the package-layer collision rules.
// It returns the effective roles of the defs that carry one (see
// roleDef.role) and the number of effective roles.
func layerRoles(list *profiles.RoleList, defs []roleDef) ([]manifest.Role, int, []Diagnostic) {
	var diags []Diagnostic
	// A file's path is built only where a diagnostic or an override
	// needs it.
	path := func(d *roleDef) string { return list.File(d.file).Path }
	layer := func(d *roleDef) string { return list.Layer(d.file) }
	// layered is the current definition of a name while layers are
	// applied, and the paths of the definitions it replaced.
	type layered struct {
		def       *roleDef
		overrides []string
	}
	catalog := map[string]layered{}
	bundled := map[string]string{} // name -> bundled path, valid or not
	apply := func(d *roleDef) {
		if d.ignored {
			return
		}
		prev, hasPrev := catalog[d.name]
		if !d.valid {
			// An invalid or unreadable definition makes the name unavailable
			// at its layer and below instead of falling back.
			delete(catalog, d.name)
			return
		}
		r := layered{def: d}
		if hasPrev {
			prevPath := path(prev.def)
			if layer(prev.def) == layer(d) {
				diags = append(diags, Diagnostic{Severity: Warning, Code: "duplicate-role-name", File: path(d),
					Message: fmt.Sprintf("Role %q is defined twice in the %s layer: %s and %s; the second wins",
						d.name, layer(d), prevPath, path(d)),
					Hint: "give each role file a distinct name", Subject: d.name,
					Related: []Related{{File: prevPath, Note: "the first definition, which this one replaces"}}})
			}
			r.overrides = append(slices.Clone(prev.overrides), prevPath)
		}
		catalog[d.name] = r
	}

	var packNames []string
	packDefs := map[string][]*roleDef{}
	for i := range defs {
		d := &defs[i]
		switch layer(d) {
		case profiles.LayerBundled:
			if !d.ignored {
				bundled[d.name] = path(d)
			}
			apply(d)
		case profiles.LayerPackage:
			// A pack file pi-herdr-agents rejects only skips itself; one it
			// loads offers its name even when facets finds it invalid.
			if !d.contributes {
				continue
			}
			if _, ok := packDefs[d.name]; !ok {
				packNames = append(packNames, d.name)
			}
			packDefs[d.name] = append(packDefs[d.name], d)
		}
	}
	for _, name := range packNames {
		ds := packDefs[name]
		if bpath, ok := bundled[name]; ok {
			for _, d := range ds {
				f := list.File(d.file)
				diags = append(diags, Diagnostic{Severity: Error, Code: "bundled-role-collision", File: f.Path,
					Message: fmt.Sprintf("Role pack cannot replace bundled role %q; use a global or project override instead.", name),
					Hint:    fmt.Sprintf("%s; the bundled role %s is kept", providerHint(&f), bpath), Subject: name,
					Related: []Related{{File: bpath, Note: "the bundled role that is kept"}}})
			}
			continue
		}
		if len(ds) > 1 {
			var who, files []string
			for _, d := range ds {
				f := list.File(d.file)
				w := f.Provider
				if w == "" {
					w = f.Path
				}
				who = append(who, w)
				files = append(files, f.Path)
			}
			slices.Sort(who)
			slices.Sort(files)
			var related []Related
			for _, f := range files[1:] {
				related = append(related, Related{File: f, Note: "another role pack's definition of " + name})
			}
			diags = append(diags, Diagnostic{Severity: Error, Code: "duplicate-package-role", File: files[0], Related: related,
				Message: fmt.Sprintf("Role %q is contributed by multiple role packs: %s", name, strings.Join(who, ", ")),
				Hint: fmt.Sprintf("It stays unavailable until only one pack provides it; use a global or project definition for an intentional override. Files: %s",
					strings.Join(files, ", ")),
				Subject: name})
			continue
		}
		apply(ds[0])
	}
	for _, l := range []string{profiles.LayerGlobal, profiles.LayerProject} {
		for i := range defs {
			if layer(&defs[i]) == l {
				apply(&defs[i])
			}
		}
	}

	var roles []manifest.Role
	for _, l := range catalog {
		if l.def.role != nil {
			r := *l.def.role
			r.Overrides = l.overrides
			roles = append(roles, r)
		}
	}
	slices.SortFunc(roles, func(a, b manifest.Role) int { return strings.Compare(a.Name, b.Name) })
	return roles, len(catalog), diags
}

func providerHint(f *profiles.RoleFile) string {
	switch {
	case f.Provider == "":
		return "contributed by a role pack without a package.json name"
	case f.ProviderVersion == "":
		return "contributed by role pack " + f.Provider
	}
	return fmt.Sprintf("contributed by role pack %s@%s", f.Provider, f.ProviderVersion)
}

package cue

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	cuelang "cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
	cueyaml "cuelang.org/go/encoding/yaml"

	"github.com/facets-dev/facets/internal/diag"
)

// Finding codes reported by validation.
const (
	CodeSyntax       = "syntax"        // the document does not parse
	CodeEncoding     = "encoding"      // the document is not valid UTF-8
	CodeNotObject    = "not-object"    // the document is not an object/mapping
	CodeUnknownField = "unknown-field" // a key the schema does not allow
	CodeMissingField = "missing-field" // a required key is absent
	CodeDuplicateKey = "duplicate-key" // a key appears twice
	CodeInvalidValue = "invalid-value" // a value violates the schema
)

// Finding is one schema violation at a position in the validated file: an
// error diagnostic, and the field it is about for the callers that drop or
// relax that field.
type Finding struct {
	diag.Diagnostic
	Field string // dotted path of the offending field, e.g. "tools.1"; empty for the document
}

// Result is the outcome of validating one document.
type Result struct {
	Findings []Finding
	doc      cuelang.Value
	ok       bool
	pos      map[string]token.Pos
	fast     *fastResult // set when the generated validator accepted the document
}

// Position returns the line and column of the value at a dotted field path
// such as "name" or "skills.2", or zeros when the document has no such
// value. Later passes use it to point their own findings into the file.
func (r *Result) Position(field string) (line, col int) {
	if r.fast != nil {
		return r.fast.slow().Position(field)
	}
	return posOf(r.pos[field])
}

// OK reports whether the document satisfied the schema.
func (r *Result) OK() bool { return r.ok && len(r.Findings) == 0 }

// Decode stores the document's fields as written into x (see
// cue.Value.Decode), whatever its findings, so a caller that accepts some
// of them (such as unknown keys) can still read the rest; check OK first
// otherwise. Unknown and duplicated keys are left out. It fails if the
// document did not parse.
func (r *Result) Decode(x any) error {
	if r.fast != nil {
		return r.fast.decode(x)
	}
	if !r.doc.Exists() {
		return errors.New("decode: the document did not parse")
	}
	return r.doc.Decode(x)
}

// ValidateJSON validates a JSON document (such as a profile config.json)
// against definition d. file is used in positions.
func (s *Schema) ValidateJSON(d Definition, file string, src []byte) (res *Result) {
	if f, ok := checkUTF8(file, src, 1); !ok {
		return &Result{Findings: []Finding{f}}
	}
	// Pi strips a UTF-8 byte order mark before it parses its own JSON
	// files; so does facets, and positions stay those an editor shows.
	src = bytes.TrimPrefix(src, []byte("\uFEFF"))
	if bytes.Contains(src, []byte("\uFEFF")) {
		if _, ok := standIn(src); !ok {
			return s.slowJSON(d, file, src)
		}
	}
	if r, ok := s.fastJSON(d, file, src); ok {
		return r
	}
	return s.slowJSON(d, file, src)
}

// slowJSON validates a JSON document with CUE.
func (s *Schema) slowJSON(d Definition, file string, src []byte) (res *Result) {
	defer recoverFinding(file, &res)
	if err := s.init(); err != nil {
		return &Result{Findings: []Finding{schemaFinding(file, err)}}
	}
	expr, err := extractJSON(file, src)
	if err != nil {
		return &Result{Findings: []Finding{jsonSyntaxFinding(file, src, err)}}
	}
	lit, ok := expr.(*ast.StructLit)
	if !ok {
		line, col := posOf(expr.Pos())
		return &Result{Findings: []Finding{{Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col, Code: CodeNotObject,
			Message: "document must be a JSON object", Hint: "wrap the settings in { }"}}}}
	}
	return s.validate(d, file, lit)
}

// extractJSON parses a JSON document into CUE syntax. JSON allows U+FEFF
// inside a string (Pi's JSON.parse and the YAML frontmatter path accept
// it) but CUE's scanner refuses it anywhere, so each one inside a string
// is swapped for a character of the same length CUE accepts and swapped
// back in the parsed literals: the verdict is JSON's and every position
// stays that of the file. A U+FEFF outside a string stays a syntax error.
func extractJSON(file string, src []byte) (ast.Expr, error) {
	const bom = "\uFEFF"
	if !bytes.Contains(src, []byte(bom)) {
		return cuejson.Extract(file, src)
	}
	stand, ok := standIn(src)
	if !ok {
		return cuejson.Extract(file, src)
	}
	swapped := make([]byte, 0, len(src))
	in := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case in && c == '\\' && i+1 < len(src):
			swapped = append(swapped, c, src[i+1])
			i++
			continue
		case c == '"':
			in = !in
		case in && bytes.HasPrefix(src[i:], []byte(bom)):
			swapped = append(swapped, stand...)
			i += len(bom) - 1
			continue
		}
		swapped = append(swapped, c)
	}
	expr, err := cuejson.Extract(file, swapped)
	if err != nil {
		return nil, err
	}
	ast.Walk(expr, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			lit.Value = strings.ReplaceAll(lit.Value, stand, bom)
		}
		return true
	}, nil)
	return expr, nil
}

// standIn picks the character extractJSON swaps for U+FEFF: one of the
// same UTF-8 length from the private-use area that src does not contain.
// Only a document holding all 6,400 of them has none; it keeps CUE's
// verdict, and ValidateJSON sends it to CUE alone so both paths agree.
func standIn(src []byte) (string, bool) {
	for r := rune(0xF8FF); r >= 0xE000; r-- {
		if !bytes.ContainsRune(src, r) {
			return string(r), true
		}
	}
	return "", false
}

// otherSpellings are keys other tools (Claude Code, other Pi extensions,
// facets' own profile and role formats) use for what a facets key says;
// an unknown key found here is told that key, when its definition has it.
var otherSpellings = map[string]string{
	"systemPromptMode": "system-prompt", "system_prompt": "system-prompt", "systemPrompt": "system-prompt",
	"defaultContext": "session-mode", "sessionMode": "session-mode",
	"allowed-tools": "tools", "allowedTools": "tools", "disallowedTools": "deny-tools", "disallowed-tools": "deny-tools",
	"denyTools": "deny-tools", "autoExit": "auto-exit", "disableModelInvocation": "disable-model-invocation",
	"thinkingLevel": "thinking", "reasoning": "thinking", "reasoningEffort": "thinking",
	"thinking": "thinkingLevel", "prompt": "instructions", "session-persistence": "sessionPersistence",
}

// ValidateFrontmatter validates YAML frontmatter taken from a Markdown file
// against definition d. startLine is the 1-based line of the file on which
// the YAML text begins, so positions point into the Markdown file.
func (s *Schema) ValidateFrontmatter(d Definition, file string, yaml []byte, startLine int) (res *Result) {
	if f, ok := checkUTF8(file, yaml, startLine); !ok {
		return &Result{Findings: []Finding{f}}
	}
	// cuelang.org/go v0.17.1's YAML decoder panics on a lone carriage
	// return (one followed by anything but a line feed; at the end of the
	// block the file's own line feed follows).
	for i, b := range yaml {
		if b != '\r' || i+1 == len(yaml) || yaml[i+1] == '\n' {
			continue
		}
		line := startLine + bytes.Count(yaml[:i], []byte("\n"))
		col := i - bytes.LastIndexByte(yaml[:i], '\n')
		return &Result{Findings: []Finding{{Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col, Code: CodeSyntax,
			Message: "frontmatter contains a lone carriage return", Hint: "save the file with LF line endings"}}}}
	}
	if r, ok := s.fastFrontmatter(d, file, yaml, startLine); ok {
		return r
	}
	return s.slowFrontmatter(d, file, yaml, startLine)
}

// slowFrontmatter validates YAML frontmatter with CUE.
func (s *Schema) slowFrontmatter(d Definition, file string, yaml []byte, startLine int) (res *Result) {
	defer recoverFinding(file, &res)
	if err := s.init(); err != nil {
		return &Result{Findings: []Finding{schemaFinding(file, err)}}
	}
	if startLine < 1 {
		startLine = 1
	}
	padded := make([]byte, 0, startLine-1+len(yaml))
	padded = append(padded, strings.Repeat("\n", startLine-1)...)
	padded = append(padded, yaml...)
	f, err := cueyaml.Extract(file, padded)
	if err != nil {
		return &Result{Findings: []Finding{syntaxFinding(file, err, "fix the YAML frontmatter syntax at this position")}}
	}
	lit := &ast.StructLit{}
	for _, decl := range f.Decls {
		field, ok := decl.(*ast.Field)
		if !ok {
			line, col := posOf(decl.Pos())
			if line == 0 {
				line, col = startLine, 1
			}
			return &Result{Findings: []Finding{{Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col, Code: CodeNotObject,
				Message: "frontmatter must be a YAML mapping of key: value lines", Hint: "write one key: value per line"}}}}
		}
		lit.Elts = append(lit.Elts, field)
	}
	lit.Lbrace = token.NoPos
	return s.validate(d, file, lit)
}

// validate runs the structural pass (unknown, missing and duplicate keys) and
// the value pass. Both always run, because CUE hides closedness and
// required-field errors on a level that also has value errors.
//
// The value pass sees only the keys the structural pass left standing:
// an unknown key is reported once, by the structural pass (CUE's own
// closedness errors grow quadratically with the number of unknown keys),
// and a duplicated key once, as duplicated (unifying its values would add
// a conflict error no single value has).
func (s *Schema) validate(d Definition, file string, lit *ast.StructLit) *Result {
	def := s.def(d)
	meta := s.meta(d)
	res := &Result{}
	docLine, docCol := posOf(lit.Lbrace)
	if docLine == 0 {
		docLine, docCol = 1, 1
		if len(lit.Elts) > 0 {
			docLine, docCol = posOf(lit.Elts[0].Pos())
		}
	}

	present := map[string]bool{}
	listedAt := 0 // the line whose hint lists the allowed keys, once per file
	fieldPos := map[string]token.Pos{}
	names := make([]string, len(lit.Elts))
	count := make(map[string]int, len(lit.Elts))
	for i, elt := range lit.Elts {
		field, ok := elt.(*ast.Field)
		if !ok {
			continue
		}
		name, _, err := ast.LabelName(field.Label)
		if err != nil {
			// A key CUE cannot make a label of ("a\nb") is no known field
			// either: it must still be reported, never skipped.
			name = rawLabel(field.Label)
		}
		names[i] = name
		count[name]++
	}
	checked := &ast.StructLit{Lbrace: lit.Lbrace, Rbrace: lit.Rbrace}
	for i, elt := range lit.Elts {
		field, ok := elt.(*ast.Field)
		if !ok {
			continue
		}
		name := names[i]
		line, col := posOf(field.Label.Pos())
		if present[name] {
			res.Findings = append(res.Findings, Finding{Field: name, Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col,
				Code: CodeDuplicateKey, Message: fmt.Sprintf("duplicate key %q", name),
				Hint: "keep one definition of this key"}})
			continue
		}
		present[name] = true
		fieldPos[name] = field.Value.Pos()
		if list, ok := field.Value.(*ast.ListLit); ok {
			for i, el := range list.Elts {
				fieldPos[name+"."+strconv.Itoa(i)] = el.Pos()
			}
		}
		allowed := def.Allows(cuelang.Str(name))
		if allowed && count[name] == 1 {
			checked.Elts = append(checked.Elts, field)
		}
		if !allowed {
			hint := "remove it; allowed keys: " + strings.Join(meta.names, ", ")
			if listedAt > 0 {
				hint = fmt.Sprintf("remove it (the allowed keys are listed at line %d)", listedAt)
			}
			if other, ok := otherSpellings[name]; ok && slices.Contains(meta.names, other) {
				hint = fmt.Sprintf("%s is another tool's name for %q; write %s", name, other, other)
			} else if near := Nearest(name, meta.names); near != "" {
				hint = fmt.Sprintf("did you mean %q?", near)
			} else if listedAt == 0 {
				listedAt = line
			}
			res.Findings = append(res.Findings, Finding{Field: name, Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col,
				Code: CodeUnknownField, Message: fmt.Sprintf("unknown field %q", name), Hint: hint}})
		}
	}
	for _, name := range meta.required {
		if !present[name] {
			msg, hint := meta.text(name)
			if hint == "" {
				hint = fmt.Sprintf("add %q", name)
			}
			m := fmt.Sprintf("missing required field %q", name)
			if msg != "" {
				m += ": " + msg
			}
			res.Findings = append(res.Findings, Finding{Field: name, Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: docLine, Column: docCol,
				Code: CodeMissingField, Message: m, Hint: hint}})
		}
	}

	data := s.ctx.BuildExpr(checked)
	unified := def.Unify(data)
	err := unified.Validate(cuelang.Concrete(true))
	seen := map[string]bool{}
	for _, e := range cueerrors.Errors(err) {
		path := slices.Clone(e.Path())
		if len(path) > 0 && strings.HasPrefix(path[0], "#") {
			path = path[1:]
		}
		for i, p := range path {
			// CUE quotes labels that are not identifiers, such as "auto-exit".
			if u, err := strconv.Unquote(p); err == nil && strings.HasPrefix(p, `"`) {
				path[i] = u
			}
		}
		if len(path) == 0 {
			continue // document-level closedness or requiredness, reported above
		}
		top := path[0]
		format, _ := e.Msg()
		// The structural pass reported missing and unknown keys of the
		// document itself; those of a nested struct (a manifest's trust,
		// a profile entry) are reported here.
		structural := strings.Contains(format, "field not allowed") || strings.Contains(format, "field is required")
		if !present[top] || (structural && len(path) == 1) {
			continue
		}
		if isUnknown(res.Findings, top) {
			continue
		}
		key := strings.Join(path, ".")
		if structural {
			if seen[key] {
				continue
			}
			seen[key] = true
			name, in := path[len(path)-1], strings.Join(path[:len(path)-1], ".")
			code, msg, hint := CodeMissingField, fmt.Sprintf("missing required field %q in %s", name, in), fmt.Sprintf("add %q to %s", name, in)
			if strings.Contains(format, "field not allowed") {
				code, msg, hint = CodeUnknownField, fmt.Sprintf("unknown field %q in %s", name, in), "remove it"
			}
			line, col := dataPos(e, file)
			if line == 0 {
				line, col = posOf(fieldPos[top])
			}
			res.Findings = append(res.Findings, Finding{Field: key, Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col,
				Code: code, Message: msg, Hint: hint}})
			continue
		}
		msg, hint := meta.text(top)
		// A bad list entry is reported at the entry, once per entry, with
		// what each entry must be; other errors once per field.
		one := top
		if elem := meta.elem(top); elem != "" && len(path) > 1 {
			if _, err := strconv.Atoi(path[1]); err == nil {
				one = top + "." + path[1]
				msg = fmt.Sprintf("%s[%s] %s", top, path[1], elem)
			}
		}
		if seen[one] {
			continue // disjunction arms and repeated bounds add nothing
		}
		seen[one] = true
		line, col := dataPos(e, file)
		if line == 0 {
			line, col = posOf(fieldPos[one])
		}
		if msg == "" {
			msg = fmt.Sprintf("%s: %s", key, e.Error())
		}
		if got := describeValue(checked, path); got != "" {
			msg += " (got " + got + ")"
		}
		res.Findings = append(res.Findings, Finding{Field: key, Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col,
			Code: CodeInvalidValue, Message: msg, Hint: hint}})
	}
	res.Findings = append(res.Findings, s.entryFindings(d, file, checked, data, present, fieldPos, seen)...)
	if err != nil && len(res.Findings) == 0 {
		// Never "invalid" without saying why: a CUE error none of the
		// rules above placed is reported as CUE words it, at the document.
		res.Findings = append(res.Findings, Finding{Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: docLine, Column: docCol,
			Code: CodeInvalidValue, Message: cueerrors.Errors(err)[0].Error(), Hint: "compare the document with " + string(d)}})
	}
	sortFindings(res.Findings)
	res.doc = data
	res.ok = err == nil
	res.pos = fieldPos
	return res
}

// entryFindings checks every entry of the list fields that have an elem=
// text, because CUE reports only the first bad entry of a list; seen holds
// the entries already reported.
func (s *Schema) entryFindings(d Definition, file string, lit *ast.StructLit, data cuelang.Value, present map[string]bool, fieldPos map[string]token.Pos, seen map[string]bool) []Finding {
	meta := s.meta(d)
	var out []Finding
	for _, name := range meta.names {
		elem := meta.elem(name)
		if elem == "" || !present[name] {
			continue
		}
		want := meta.elemVals[name]
		it, err := data.LookupPath(cuelang.MakePath(cuelang.Str(name))).List()
		if !want.Exists() || err != nil {
			continue
		}
		_, hint := meta.text(name)
		for i := 0; it.Next(); i++ {
			key := name + "." + strconv.Itoa(i)
			if seen[key] || want.Unify(it.Value()).Validate(cuelang.Concrete(true)) == nil {
				continue
			}
			seen[key] = true
			line, col := posOf(fieldPos[key])
			msg := fmt.Sprintf("%s[%d] %s", name, i, elem)
			if got := describeValue(lit, []string{name, strconv.Itoa(i)}); got != "" {
				msg += " (got " + got + ")"
			}
			out = append(out, Finding{Field: key, Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col, Code: CodeInvalidValue, Message: msg, Hint: hint}})
		}
	}
	return out
}

func isUnknown(fs []Finding, field string) bool {
	for _, f := range fs {
		if f.Field == field && f.Code == CodeUnknownField {
			return true
		}
	}
	return false
}

func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		if a.Column != b.Column {
			return a.Column - b.Column
		}
		return strings.Compare(a.Code, b.Code)
	})
}

// dataPos picks the first error position that lies in the data file, since
// CUE orders schema and data positions inconsistently.
func dataPos(e cueerrors.Error, file string) (int, int) {
	for _, p := range cueerrors.Positions(e) {
		if p.Filename() == file {
			return p.Line(), p.Column()
		}
	}
	return 0, 0
}

func posOf(p token.Pos) (int, int) {
	if !p.IsValid() {
		return 0, 0
	}
	return p.Line(), p.Column()
}

func syntaxFinding(file string, err error, hint string) Finding {
	f := Finding{Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: 1, Column: 1, Code: CodeSyntax, Hint: hint}}
	errs := cueerrors.Errors(err)
	if len(errs) > 0 {
		for _, p := range cueerrors.Positions(errs[0]) {
			if p.IsValid() {
				f.Line, f.Column = p.Line(), p.Column()
				break
			}
		}
		format, args := errs[0].Msg()
		f.Message = fmt.Sprintf(format, args...)
	}
	if strings.TrimSpace(f.Message) == "" || strings.Contains(f.Message, "%!") {
		f.Message = err.Error()
	}
	// The YAML decoder reports "file:LINE: message" as plain text without a
	// position; recover both from the text.
	// Compiled here, not at package initialization: syntax errors are rare.
	locatedMessage := regexp.MustCompile(`^(.*?):(\d+):(?:(\d+):)? (.*)$`)
	if m := locatedMessage.FindStringSubmatch(f.Message); m != nil && m[1] == file {
		if line, err := strconv.Atoi(m[2]); err == nil && line > 0 {
			f.Line, f.Column = line, 1
			if col, err := strconv.Atoi(m[3]); err == nil && col > 0 {
				f.Column = col
			}
		}
		f.Message = m[4]
	}
	f.Message = strings.TrimPrefix(f.Message, file+": ")
	return f
}

// recoverFinding turns a panic inside the CUE evaluator into a finding, so
// one pathological file is reported instead of crashing the whole check.
func recoverFinding(file string, res **Result) {
	if r := recover(); r != nil {
		*res = &Result{Findings: []Finding{{Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: 1, Column: 1, Code: CodeSyntax,
			Message: fmt.Sprintf("the validator failed on this file: %v", r),
			Hint:    "simplify the file; please report this input as a facets bug"}}}}
	}
}

// jsonSyntaxFinding prefers encoding/json's description of a syntax error,
// which says what was expected, over CUE's generic "invalid JSON".
func jsonSyntaxFinding(file string, src []byte, err error) Finding {
	f := syntaxFinding(file, err, "fix the JSON syntax at this position")
	var v any
	var se *stdjson.SyntaxError
	if jerr := stdjson.Unmarshal(src, &v); errors.As(jerr, &se) {
		line, col := 1, 1 // columns count bytes, as CUE's positions do
		for _, c := range src[:min(int(se.Offset), len(src))] {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		if se.Offset > 0 && col > 1 {
			col-- // Offset counts the offending byte itself
		}
		f.Line, f.Column = line, col
		f.Message = "invalid JSON: " + se.Error()
		if at := int(se.Offset) - 1; at > 0 && at < len(src) && (src[at] == '}' || src[at] == ']') {
			if comma := bytes.LastIndexFunc(src[:at], func(r rune) bool { return !unicode.IsSpace(r) }); comma >= 0 && src[comma] == ',' {
				f.Line = 1 + bytes.Count(src[:comma], []byte("\n"))
				f.Column = 1 + comma - (bytes.LastIndexByte(src[:comma], '\n') + 1)
				f.Message = fmt.Sprintf("invalid JSON: trailing comma before '%c'", src[at])
				f.Hint = "remove the comma: JSON allows none after the last entry"
			}
		}
	}
	return f
}

// checkUTF8 rejects invalid UTF-8 up front: decoders would otherwise
// replace the bad bytes with U+FFFD and silently change the data.
func checkUTF8(file string, src []byte, startLine int) (Finding, bool) {
	if utf8.Valid(src) {
		return Finding{}, true
	}
	line, col := startLine, 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			return Finding{Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: line, Column: col, Code: CodeEncoding,
				Message: fmt.Sprintf("invalid UTF-8 byte 0x%02x", src[i]), Hint: "save the file as UTF-8"}}, false
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col += size // columns count bytes, as CUE's positions do
		}
		i += size
	}
	return Finding{}, true
}

// defMeta caches what the structural pass needs from a definition, because
// walking a definition's fields costs as much as validating a document.
type defMeta struct {
	names    []string
	required []string
	msgs     map[string][2]string
	elems    map[string]string
	elemVals map[string]cuelang.Value // what one entry of an elem= list must satisfy
}

// elem is what each entry of a list field must be (the elem= part of its
// @facets attribute), or "" for other fields.
func (m *defMeta) elem(field string) string { return m.elems[field] }

func (m *defMeta) text(field string) (msg, hint string) {
	t := m.msgs[field]
	return t[0], t[1]
}

func (s *Schema) meta(d Definition) *defMeta {
	if m := s.metas[d]; m != nil {
		return m
	}
	m := &defMeta{msgs: map[string][2]string{}, elems: map[string]string{}, elemVals: map[string]cuelang.Value{}}
	if it, err := s.def(d).Fields(cuelang.Optional(true)); err == nil {
		for it.Next() {
			name := it.Selector().Unquoted()
			m.names = append(m.names, name)
			if it.Selector().ConstraintType() == cuelang.RequiredConstraint {
				m.required = append(m.required, name)
			}
			m.msgs[name] = attrText(it.Value())
			if a := it.Value().Attribute("facets"); a.Err() == nil {
				if elem, ok, _ := a.Lookup(0, "elem"); ok {
					m.elems[name] = elem
					m.elemVals[name] = it.Value().LookupPath(cuelang.MakePath(cuelang.AnyIndex))
				}
			}
		}
	}
	if s.metas == nil {
		s.metas = map[Definition]*defMeta{}
	}
	s.metas[d] = m
	return m
}

// attrText reads the @facets(msg=..., hint=...) attribute of a schema field,
// so messages live next to the constraint they explain.
func attrText(field cuelang.Value) [2]string {
	a := field.Attribute("facets")
	if a.Err() != nil {
		return [2]string{}
	}
	msg, _, _ := a.Lookup(0, "msg")
	hint, _, _ := a.Lookup(0, "hint")
	return [2]string{msg, hint}
}

// describeValue renders the offending data value briefly, for messages.
func describeValue(lit *ast.StructLit, path []string) string {
	var cur ast.Expr = lit
	for _, p := range path {
		switch x := cur.(type) {
		case *ast.StructLit:
			var next ast.Expr
			for _, elt := range x.Elts {
				if f, ok := elt.(*ast.Field); ok {
					if name, _, err := ast.LabelName(f.Label); err == nil && name == p {
						next = f.Value
					}
				}
			}
			if next == nil {
				return ""
			}
			cur = next
		case *ast.ListLit:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x.Elts) {
				return ""
			}
			cur = x.Elts[i]
		default:
			return ""
		}
	}
	switch x := cur.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			if u, err := literal.Unquote(x.Value); err == nil {
				return diag.Quote(u)
			}
		}
		v := x.Value
		if r := []rune(v); len(r) > diag.MaxQuoted {
			v = string(r[:diag.MaxQuoted-1]) + "…"
		}
		return v
	case *ast.ListLit:
		return fmt.Sprintf("a list of %d", len(x.Elts))
	case *ast.StructLit:
		return "an object"
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// Nearest returns the candidate closest to a misspelled name (case
// ignored, at most two edits away), or "" when none is that close.
func Nearest(name string, candidates []string) string {
	best, bestD := "", 3
	lower := strings.ToLower(name)
	n := utf8.RuneCountInString(lower)
	for _, c := range candidates {
		if diff := n - utf8.RuneCountInString(c); diff >= bestD || -diff >= bestD {
			continue // the distance is at least the difference in length
		}
		d := distance(lower, strings.ToLower(c))
		if d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// rawLabel is the key of a label that ast.LabelName rejects, unquoted when
// possible, for the unknown-field finding.
func rawLabel(l ast.Label) string {
	lit, ok := l.(*ast.BasicLit)
	if !ok {
		return fmt.Sprint(l)
	}
	if u, err := literal.Unquote(lit.Value); err == nil {
		return u
	}
	return lit.Value
}

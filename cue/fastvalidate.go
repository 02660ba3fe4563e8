package cue

//go:generate go run gen.go

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/facets-dev/facets/internal/diag"
)

// The fast path: validators generated from the schema (fastvalidate_gen.go)
// accept the common, valid document without CUE. They only ever say "valid"
// or "not sure"; every other document goes through CUE, so findings and
// their messages always come from CUE and the schema's @facets attributes.
// TestFastMatchesCUE and FuzzFastMatchesCUE check that a fast "valid" is
// CUE's verdict too, with the same positions and decoded values.

type fastKind uint8

const (
	fastInvalid fastKind = iota
	fastString
	fastNumber // str holds the literal as written
	fastBool
	fastNull
	fastList
)

// fastValue is a scalar or a list of scalars, the only values the profile
// and role schemas accept.
type fastValue struct {
	kind  fastKind
	b     bool
	str   string
	items []fastValue
}

// fastRegexps compiles the schema's patterns on first use, once per Schema.
type fastRegexps struct {
	re [len(fastPatterns)]*regexp.Regexp
}

func (r *fastRegexps) get(i int) *regexp.Regexp {
	if r.re[i] == nil {
		r.re[i] = regexp.MustCompile(fastPatterns[i])
	}
	return r.re[i]
}

// fastResult is what a fast-path Result knows without CUE. Positions, and
// decoding into anything but a map, are rare (diagnostics after a valid
// schema check) and are answered by validating the document with CUE once.
type fastResult struct {
	fields map[string]any // decoded document, for YAML frontmatter
	// keys and vals are a JSON document's members as parsed, for EachMember.
	keys   []string
	vals   []fastValue
	slowFn func() *Result
	slowR  *Result
}

func (f *fastResult) slow() *Result {
	if f.slowR == nil {
		f.slowR = f.slowFn()
		f.slowFn = nil
	}
	return f.slowR
}

func (f *fastResult) decode(x any) error {
	if m, ok := x.(*map[string]any); ok && f.fields != nil {
		out := make(map[string]any, len(f.fields))
		for k, v := range f.fields {
			out[k] = v
		}
		*m = out
		return nil
	}
	return f.slow().Decode(x)
}

type fastFieldFunc func(rx *fastRegexps, name string, v *fastValue) (known, ok bool)

func fastDef(d Definition) (fastFieldFunc, []string) {
	switch d {
	case Profile:
		return fastProfileField, fastProfileRequired[:]
	case Role:
		return fastRoleField, fastRoleRequired[:]
	}
	return nil, nil
}

// fastCheck applies the generated field checks to a parsed document.
func (s *Schema) fastCheck(d Definition, keys []string, vals []fastValue) bool {
	check, required := fastDef(d)
	if check == nil {
		return false
	}
	for i, k := range keys {
		for _, prev := range keys[:i] {
			if prev == k {
				return false // duplicate key: CUE reports it
			}
		}
		if known, ok := check(&s.rx, k, &vals[i]); !known || !ok {
			return false
		}
	}
	for _, r := range required {
		found := false
		for _, k := range keys {
			if k == r {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// fastJSON accepts src when it is a JSON object that the generated
// validator for d accepts; ok is false when CUE must decide.
func (s *Schema) fastJSON(d Definition, file string, src []byte) (res *Result, ok bool) {
	if check, _ := fastDef(d); check == nil || s.slowOnly {
		return nil, false
	}
	p := fastJSONParser{s: string(src), keys: s.scratchKeys[:0], vals: s.scratchVals[:0]}
	defer func() { s.keepScratch(p.keys, p.vals) }()
	if !p.document() {
		return nil, false
	}
	if !s.fastCheck(d, p.keys, p.vals) {
		return nil, false
	}
	return &Result{ok: true, fast: &fastResult{keys: slices.Clone(p.keys), vals: slices.Clone(p.vals),
		slowFn: func() *Result { return s.slowJSON(d, file, src) }}}, true
}

// Member is one member of a JSON document that the generated validator
// accepted (see EachMember).
type Member struct {
	Key    string
	Str    string   // a string's value, or a number's literal as written
	Number bool     // Str is a number's literal
	List   []string // a list's strings, when IsList
	IsList bool
}

// EachMember calls fn, in document order, for every member of a JSON
// document that the generated validator accepted without CUE, so that a
// caller can read the fields without decoding the document again. For any
// other Result, or a document with a boolean, null or non-string list
// item, it calls nothing and returns false; decode the document instead.
func (r *Result) EachMember(fn func(Member)) bool {
	if r.fast == nil || r.fast.keys == nil {
		return false
	}
	for _, v := range r.fast.vals {
		switch v.kind {
		case fastString, fastNumber:
		case fastList:
			for _, it := range v.items {
				if it.kind != fastString {
					return false
				}
			}
		default:
			return false
		}
	}
	for i, k := range r.fast.keys {
		v := r.fast.vals[i]
		if v.kind != fastList {
			fn(Member{Key: k, Str: v.str, Number: v.kind == fastNumber})
			continue
		}
		list := make([]string, len(v.items))
		for j, it := range v.items {
			list[j] = it.str
		}
		fn(Member{Key: k, List: list, IsList: true})
	}
	return true
}

// fastFrontmatter accepts YAML frontmatter written as plain "key: value"
// lines that the generated validator for d accepts; ok is false when CUE
// must decide (quotes, comments after values, numbers, nesting, ...).
func (s *Schema) fastFrontmatter(d Definition, file string, yaml []byte, startLine int) (res *Result, ok bool) {
	if check, _ := fastDef(d); check == nil || s.slowOnly {
		return nil, false
	}
	keys, vals := s.scratchKeys[:0], s.scratchVals[:0]
	defer func() { s.keepScratch(keys, vals) }()
	for rest := string(yaml); ; {
		line, after, more := strings.Cut(rest, "\n")
		rest = after
		if line != "" && line[0] != '#' {
			k, v, found := strings.Cut(line, ": ")
			if !found || !fastYAMLKey(k) {
				return nil, false
			}
			var fv fastValue
			switch {
			case v == "true" || v == "false":
				fv = fastValue{kind: fastBool, b: v == "true"}
			case fastYAMLPlain(v):
				fv = fastValue{kind: fastString, str: v}
			default:
				return nil, false
			}
			keys, vals = append(keys, k), append(vals, fv)
		}
		if !more {
			break
		}
	}
	if len(keys) == 0 {
		return nil, false
	}
	if !s.fastCheck(d, keys, vals) {
		return nil, false
	}
	fields := make(map[string]any, len(keys))
	for i, k := range keys {
		if vals[i].kind == fastBool {
			fields[k] = vals[i].b
		} else {
			fields[k] = vals[i].str
		}
	}
	return &Result{ok: true, fast: &fastResult{fields: fields,
		slowFn: func() *Result { return s.slowFrontmatter(d, file, yaml, startLine) }}}, true
}

// keepScratch keeps the parse buffers for the next document, emptied so
// that nothing of this document stays reachable from the Schema.
func (s *Schema) keepScratch(keys []string, vals []fastValue) {
	clear(keys)
	clear(vals)
	s.scratchKeys, s.scratchVals = keys[:0], vals[:0]
}

// fastYAMLKey accepts the spellings of the schema's keys: a letter, then
// letters, digits, underscores and hyphens.
func fastYAMLKey(k string) bool {
	if k == "" || !isLetter(k[0]) {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !isLetter(c) && !isDigit(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// fastYAMLPlain accepts a plain scalar that every YAML reading takes as
// exactly this string: it starts with a letter, uses only a few
// punctuation characters, has no trailing space, and is not a word some
// YAML versions read as a boolean or null.
func fastYAMLPlain(v string) bool {
	if v == "" || !isLetter(v[0]) || v[len(v)-1] == ' ' {
		return false
	}
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case isLetter(c), isDigit(c):
		case c == ' ', c == ',', c == '.', c == '/', c == '_', c == '-', c == '+', c == '(', c == ')':
		default:
			return false
		}
	}
	if len(v) <= 5 {
		switch strings.ToLower(v) {
		case "y", "yes", "n", "no", "on", "off", "true", "false", "null":
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// fastJSONParser reads a JSON object of scalars and lists of scalars. It
// is strict JSON; anything else (nesting, \u escapes, syntax errors) stops
// it and leaves the document to CUE.
type fastJSONParser struct {
	s    string
	i    int
	keys []string
	vals []fastValue
}

func (p *fastJSONParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastJSONParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *fastJSONParser) document() bool {
	p.ws()
	if p.peek() != '{' {
		return false
	}
	p.i++
	p.ws()
	if p.peek() == '}' {
		p.i++
	} else {
		for {
			p.ws()
			k, ok := p.str()
			if !ok {
				return false
			}
			p.ws()
			if p.peek() != ':' {
				return false
			}
			p.i++
			p.ws()
			v, ok := p.value(true)
			if !ok {
				return false
			}
			p.keys, p.vals = append(p.keys, k), append(p.vals, v)
			p.ws()
			c := p.peek()
			p.i++
			if c == '}' {
				break
			}
			if c != ',' {
				return false
			}
		}
	}
	p.ws()
	return p.i == len(p.s)
}

func (p *fastJSONParser) value(listOK bool) (fastValue, bool) {
	switch c := p.peek(); {
	case c == '"':
		s, ok := p.str()
		return fastValue{kind: fastString, str: s}, ok
	case c == '[' && listOK:
		p.i++
		var items []fastValue
		p.ws()
		if p.peek() == ']' {
			p.i++
			return fastValue{kind: fastList, items: []fastValue{}}, true
		}
		for {
			p.ws()
			v, ok := p.value(false)
			if !ok {
				return fastValue{}, false
			}
			items = append(items, v)
			p.ws()
			c := p.peek()
			p.i++
			if c == ']' {
				return fastValue{kind: fastList, items: items}, true
			}
			if c != ',' {
				return fastValue{}, false
			}
		}
	case c == 't':
		return fastValue{kind: fastBool, b: true}, p.word("true")
	case c == 'f':
		return fastValue{kind: fastBool}, p.word("false")
	case c == 'n':
		return fastValue{kind: fastNull}, p.word("null")
	case c == '-' || isDigit(c):
		start := p.i
		if !p.number() {
			return fastValue{}, false
		}
		return fastValue{kind: fastNumber, str: p.s[start:p.i]}, true
	}
	return fastValue{}, false
}

func (p *fastJSONParser) word(w string) bool {
	if !strings.HasPrefix(p.s[p.i:], w) {
		return false
	}
	p.i += len(w)
	return true
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *fastJSONParser) number() bool {
	digits := func() bool {
		start := p.i
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
		}
		return p.i > start
	}
	if p.peek() == '-' {
		p.i++
	}
	if p.peek() == '0' {
		p.i++
	} else if !digits() {
		return false
	}
	if p.peek() == '.' {
		p.i++
		if !digits() {
			return false
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !digits() {
			return false
		}
	}
	return true
}

// str reads a JSON string. Strings without escapes share the document's
// memory; simple escapes are decoded; \u escapes are left to CUE.
func (p *fastJSONParser) str() (string, bool) {
	if p.peek() != '"' {
		return "", false
	}
	p.i++
	start := p.i
	escaped := false
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			raw := p.s[start:p.i]
			p.i++
			if !escaped {
				return raw, true
			}
			var out string
			if err := json.Unmarshal([]byte(p.s[start-1:p.i]), &out); err != nil {
				return "", false
			}
			return out, true
		case c == '\\':
			if p.i+1 >= len(p.s) || !strings.ContainsRune(`"\/bfnrt`, rune(p.s[p.i+1])) {
				return "", false
			}
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", false
		default:
			p.i++
		}
	}
	return "", false
}

// schemaFinding reports that the embedded schema itself failed to compile,
// which only a broken build can cause.
func schemaFinding(file string, err error) Finding {
	return Finding{Diagnostic: diag.Diagnostic{Severity: diag.Error, File: file, Line: 1, Column: 1, Code: CodeSyntax,
		Message: fmt.Sprintf("the embedded schema failed to load: %v", err),
		Hint:    "please report this as a facets bug"}}
}

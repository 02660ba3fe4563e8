package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/pitools"
	"github.com/facets-dev/facets/profiles"
)

// schemaInfo is what completion and hover know about the schema, read
// once from the CUE schema, so requests never touch the validation
// goroutine's (unshareable) CUE context.
type schemaInfo struct {
	profile []cue.Field
	role    []cue.Field
	// levels are Pi's thinking levels: #Role's thinking enum, which
	// #Profile's free-form thinkingLevel is passed to Pi as.
	levels []string
}

func loadSchemaInfo() (*schemaInfo, error) {
	s, err := cue.Load()
	if err != nil {
		return nil, err
	}
	info := &schemaInfo{}
	if info.profile, err = s.Fields(cue.Profile); err != nil {
		return nil, err
	}
	if info.role, err = s.Fields(cue.Role); err != nil {
		return nil, err
	}
	if f, ok := field(info.role, "thinking"); ok {
		info.levels = f.Enum
	}
	return info, nil
}

func field(fs []cue.Field, name string) (cue.Field, bool) {
	i := slices.IndexFunc(fs, func(f cue.Field) bool { return f.Name == name })
	if i < 0 {
		return cue.Field{}, false
	}
	return fs[i], true
}

// docKind is what an open file is to facets.
type docKind int

const (
	otherDoc docKind = iota
	profileDoc
	roleDoc
)

// kindOf tells a profile (profiles/<name>/config.json or the legacy
// profiles/<name>.json) and a role file (Markdown with frontmatter, not
// MAIN.md or instructions.md) from other files by path and content.
func kindOf(path, text string) docKind {
	dir, base := filepath.Dir(path), filepath.Base(path)
	switch {
	case base == "config.json" && filepath.Base(filepath.Dir(dir)) == "profiles":
		return profileDoc
	case strings.HasSuffix(base, ".json") && filepath.Base(dir) == "profiles":
		return profileDoc
	case strings.HasSuffix(base, ".md") && base != "MAIN.md" && base != "instructions.md" && strings.HasPrefix(text, "---"):
		return roleDoc
	}
	return otherDoc
}

func (s *Server) document(uri string) (document, *schemaInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[uri]
	if d == nil || s.schemaInfo == nil {
		return document{}, nil, false
	}
	return *d, s.schemaInfo, true
}

func (s *Server) completion(p textDocumentPositionParams) completionList {
	out := completionList{Items: []completionItem{}}
	doc, info, ok := s.document(p.TextDocument.URI)
	if !ok {
		return out
	}
	lines := newLineIndex(doc.text)
	off := lines.offset(p.Position)
	switch kindOf(doc.path, doc.text) {
	case profileDoc:
		out.Items = s.jsonCompletions(info, doc, lines, off)
	case roleDoc:
		out.Items = s.roleCompletions(info, doc, lines, p.Position)
	}
	if out.Items == nil {
		out.Items = []completionItem{}
	}
	return out
}

// fieldDoc is the Markdown shown for a field in completion and hover.
func fieldDoc(f cue.Field) *markupContent {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**", f.Name)
	var tags []string
	if f.Kind != "" {
		tags = append(tags, f.Kind)
	}
	if f.Required {
		tags = append(tags, "required")
	}
	if len(tags) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(tags, ", "))
	}
	if f.Doc != "" {
		b.WriteString("\n\n" + f.Doc)
	}
	if len(f.Enum) > 1 {
		b.WriteString("\n\nOne of: `" + strings.Join(f.Enum, "`, `") + "`")
	}
	if f.Hint != "" {
		b.WriteString("\n\nHint: " + f.Hint)
	}
	return &markupContent{Kind: "markdown", Value: b.String()}
}

// Completion item kinds.
const (
	kindProperty = 10
	kindValue    = 12
	kindFile     = 17
)

// valuesFor lists the values offered for one field (or one entry of a
// list field) of a profile or role.
func (s *Server) valuesFor(info *schemaInfo, f cue.Field) (values []string, itemKind int) {
	switch {
	case f.Name == "tools" || f.Name == "deny-tools":
		return pitools.Native(), kindValue
	case f.Name == "skills" || f.Name == "skill":
		return s.skillNames(), kindFile
	case f.Name == "thinkingLevel":
		return info.levels, kindValue
	case f.Kind == "bool":
		return []string{"true", "false"}, kindValue
	}
	return f.Enum, kindValue
}

func (s *Server) skillNames() []string {
	s.mu.Lock()
	opts := s.opts
	s.mu.Unlock()
	trust, err := profiles.DecideTrust(opts.Env, opts.TrustFlag, opts.PiTrust)
	return profiles.SkillNames(opts.Env, err == nil && trust.Trusted)
}

// jsonContext is where the cursor is in a JSON document, as far as a
// scan from the start can tell in a possibly broken document.
type jsonContext struct {
	depth     int    // 1 inside the top-level object
	inArray   bool   // the innermost container is an array
	wantKey   bool   // in the top-level object where a key goes
	key       string // the top-level key whose value holds the cursor
	inString  bool
	strStart  int // offset of the opening quote, when inString
	strEnd    int // offset after the closing quote (or the line end)
	keysAbove map[string]bool
}

func scanJSON(text string, off int) jsonContext {
	c := jsonContext{keysAbove: map[string]bool{}}
	type frame struct {
		array   bool
		wantKey bool
	}
	var stack []frame
	lastString := ""
scan:
	for i := 0; i < off && i < len(text); i++ {
		switch text[i] {
		case '"':
			// j ends at the closing quote, or at the line end of an
			// unterminated string (one being typed).
			j := i + 1
			for j < len(text) && text[j] != '"' && text[j] != '\n' {
				if text[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(text))
			if off <= j {
				c.inString, c.strStart, c.strEnd = true, i, j
				if j < len(text) && text[j] == '"' {
					c.strEnd = j + 1
				}
				break scan
			}
			lastString = text[i+1 : j]
			if len(stack) == 1 && stack[0].wantKey {
				c.keysAbove[lastString] = true
			}
			i = j
		case '{':
			stack = append(stack, frame{wantKey: true})
		case '[':
			stack = append(stack, frame{array: true})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ':':
			if n := len(stack); n > 0 && !stack[n-1].array {
				stack[n-1].wantKey = false
				if n == 1 {
					c.key = lastString
				}
			}
		case ',':
			if n := len(stack); n > 0 && !stack[n-1].array {
				stack[n-1].wantKey = true
				if n == 1 {
					c.key = ""
				}
			}
		}
	}
	// Keys after the cursor count as present too.
	for k := range keysAfter(text, off) {
		c.keysAbove[k] = true
	}
	c.depth = len(stack)
	if c.depth > 0 {
		top := stack[c.depth-1]
		c.inArray = top.array
		c.wantKey = c.depth == 1 && top.wantKey
	}
	if c.depth > 2 || c.depth == 2 && !c.inArray {
		c.key = ""
	}
	return c
}

// keysAfter finds "key": pairs after off at the start of a line or after
// a comma or brace: enough to not offer a key the document already has.
func keysAfter(text string, off int) map[string]bool {
	keys := map[string]bool{}
	rest := text[min(off, len(text)):]
	for {
		i := strings.Index(rest, `":`)
		if i < 0 {
			return keys
		}
		j := strings.LastIndexByte(rest[:i], '"')
		if j >= 0 {
			before := strings.TrimRight(rest[:j], " \t\r\n")
			if before == "" || strings.HasSuffix(before, ",") || strings.HasSuffix(before, "{") {
				keys[rest[j+1:i]] = true
			}
		}
		rest = rest[i+2:]
	}
}

func (s *Server) jsonCompletions(info *schemaInfo, doc document, lines *lineIndex, off int) []completionItem {
	c := scanJSON(doc.text, off)
	replace := func() *lspRange {
		if !c.inString {
			return nil
		}
		r := lspRange{Start: lines.positionAt(c.strStart), End: lines.positionAt(c.strEnd)}
		return &r
	}
	item := func(label, newText string, kind int, docs *markupContent) completionItem {
		it := completionItem{Label: label, Kind: kind, Documentation: docs, InsertText: newText}
		if r := replace(); r != nil {
			it.TextEdit = &textEdit{Range: *r, NewText: newText}
			it.FilterText = `"` + label + `"`
			it.InsertText = ""
		}
		return it
	}
	var items []completionItem
	switch {
	case c.wantKey:
		for _, f := range info.profile {
			if c.keysAbove[f.Name] {
				continue
			}
			text := fmt.Sprintf("%q: ", f.Name)
			if c.inString {
				text = fmt.Sprintf("%q", f.Name)
			}
			it := item(f.Name, text, kindProperty, fieldDoc(f))
			it.Detail = f.Kind
			items = append(items, it)
		}
	case c.depth == 1 && c.key != "" || c.depth == 2 && c.inArray && c.key != "":
		f, ok := field(info.profile, c.key)
		if !ok || f.Kind == "list" != (c.depth == 2) {
			return nil
		}
		values, kind := s.valuesFor(info, f)
		if f.Name == "skills" && c.inString {
			// A path being typed: the skills that exist relative to the
			// profile file, as the compiler resolves them.
			if typed := doc.text[c.strStart+1 : off]; strings.HasPrefix(typed, ".") || strings.Contains(typed, "/") {
				values = skillPaths(filepath.Dir(doc.path), typed)
			}
		}
		for _, v := range values {
			text := v
			if f.Kind != "number" && f.Kind != "bool" {
				text = fmt.Sprintf("%q", v)
			}
			items = append(items, item(v, text, kind, nil))
		}
	}
	return items
}

// positionAt converts a byte offset to an LSP position.
func (x *lineIndex) positionAt(off int) position {
	off = min(max(off, 0), len(x.text))
	n, _ := slices.BinarySearch(x.starts, off+1)
	n--
	return position{Line: n, Character: utf16Len(x.text[x.starts[n]:off])}
}

// frontmatterLines returns the 0-based lines of a role file's frontmatter
// block: after the opening --- line, up to the closing one (or the end).
func frontmatterLines(lines *lineIndex) (first, last int, ok bool) {
	if lines.line(0) != "---" {
		return 0, 0, false
	}
	for n := 1; n < len(lines.starts); n++ {
		if l := lines.line(n); l == "---" || l == "..." {
			return 1, n - 1, true
		}
	}
	return 1, len(lines.starts) - 1, true
}

func (s *Server) roleCompletions(info *schemaInfo, doc document, lines *lineIndex, pos position) []completionItem {
	first, last, ok := frontmatterLines(lines)
	if !ok || pos.Line < first || pos.Line > last {
		return nil
	}
	pos = lines.positionAt(lines.offset(pos)) // a client may send a column past the line's end
	line := lines.line(pos.Line)
	cur := lines.offset(pos) - lines.starts[pos.Line]
	before := line[:min(cur, len(line))]
	lineStart := position{Line: pos.Line}
	var items []completionItem
	key, value, hasColon := strings.Cut(before, ":")
	if !hasColon {
		present := map[string]bool{}
		for n := first; n <= last; n++ {
			if k, _, ok := strings.Cut(lines.line(n), ":"); ok && n != pos.Line {
				present[strings.TrimSpace(k)] = true
			}
		}
		for _, f := range info.role {
			if present[f.Name] {
				continue
			}
			items = append(items, completionItem{Label: f.Name, Kind: kindProperty, Detail: f.Kind, Documentation: fieldDoc(f),
				TextEdit: &textEdit{Range: lspRange{Start: lineStart, End: pos}, NewText: f.Name + ": "}})
		}
		return items
	}
	f, ok := field(info.role, strings.TrimSpace(key))
	if !ok {
		return nil
	}
	values, kind := s.valuesFor(info, f)
	// Comma lists (tools, skills) complete the item being typed.
	itemStart := len(key) + 1
	if i := strings.LastIndexByte(value, ','); i >= 0 && f.Kind == "string" && len(f.Enum) == 0 {
		itemStart += i + 1
	}
	for itemStart < len(before) && before[itemStart] == ' ' {
		itemStart++
	}
	start := position{Line: pos.Line, Character: utf16Len(line[:itemStart])}
	for _, v := range values {
		items = append(items, completionItem{Label: v, Kind: kind,
			TextEdit: &textEdit{Range: lspRange{Start: start, End: pos}, NewText: v}})
	}
	return items
}

func (s *Server) hover(p textDocumentPositionParams) *hover {
	doc, info, ok := s.document(p.TextDocument.URI)
	if !ok {
		return nil
	}
	lines := newLineIndex(doc.text)
	var fields []cue.Field
	var name string
	switch kindOf(doc.path, doc.text) {
	case profileDoc:
		fields = info.profile
		off := lines.offset(p.Position)
		c := scanJSON(doc.text, off)
		switch {
		case c.inString && c.wantKey:
			end := strings.IndexByte(doc.text[c.strStart+1:c.strEnd], '"')
			if end < 0 {
				return nil
			}
			name = doc.text[c.strStart+1 : c.strStart+1+end]
		case c.depth == 1 || c.depth == 2 && c.inArray:
			name = c.key
		}
	case roleDoc:
		fields = info.role
		first, last, ok := frontmatterLines(lines)
		if !ok || p.Position.Line < first || p.Position.Line > last {
			return nil
		}
		k, _, ok := strings.Cut(lines.line(p.Position.Line), ":")
		if !ok {
			return nil
		}
		name = strings.TrimSpace(k)
	}
	f, ok := field(fields, name)
	if !ok {
		return nil
	}
	return &hover{Contents: *fieldDoc(f)}
}

// maxSkillPathEntries bounds the directory entries skillPaths reads.
const maxSkillPathEntries = 500

// skillPaths completes a relative skills entry: the directory of typed
// (relative to base, the profile file's directory) lists its .md files,
// its directories holding SKILL.md (both usable entries) and its other
// directories (with a trailing slash, to descend into). Each offered
// entry resolves as the compiler resolves skills (profiles.ResolveSkill).
func skillPaths(base, typed string) []string {
	dirPart := ""
	if i := strings.LastIndexByte(typed, '/'); i >= 0 {
		dirPart = typed[:i+1]
	}
	f, err := os.Open(filepath.Join(base, filepath.FromSlash(dirPart)))
	if err != nil {
		return nil
	}
	entries, _ := f.ReadDir(maxSkillPathEntries)
	f.Close()
	if dirPart == "" {
		dirPart = "./"
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && name != ".." {
			continue
		}
		full := filepath.Join(base, filepath.FromSlash(dirPart), name)
		fi, err := os.Stat(full)
		switch {
		case err != nil:
		case fi.IsDir():
			if sf, err := os.Stat(filepath.Join(full, "SKILL.md")); err == nil && sf.Mode().IsRegular() {
				out = append(out, dirPart+name) // a skill's own files are never skills
			} else {
				out = append(out, dirPart+name+"/")
			}
		case fi.Mode().IsRegular() && strings.HasSuffix(name, ".md"):
			out = append(out, dirPart+name)
		}
	}
	slices.Sort(out)
	return out
}

package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueyaml "cuelang.org/go/encoding/yaml"

	"github.com/facets-dev/facets/internal/safefile"
)

// ClaudeTools maps Claude Code's tool names to Pi's. A Claude Code tool not
// here has no Pi equivalent and is dropped; an MCP tool (mcp__…) is kept.
var ClaudeTools = map[string]string{
	"Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit",
	"Bash": "bash", "Grep": "grep", "Glob": "find", "LS": "ls",
}

// ImportedRole is one Claude Code agent file turned into a Pi role file:
// what was carried over unchanged, mapped, and dropped, one line each.
type ImportedRole struct {
	Source  string // the Claude Code agent file
	Target  string // the role file written ("" when nothing was written)
	Name    string
	Carried []string
	Mapped  []string
	Dropped []string
	// Skipped says why no file was written (one exists, the source is
	// unreadable); the other fields may be empty then.
	Skipped string
	Data    []byte // the role file's text
}

// maxClaudeAgent bounds one agent file read.
const maxClaudeAgent = 1 << 20

// ImportClaude converts every Claude Code agent file (*.md) in dir into a Pi
// role file in w.AgentsDir, never overwriting one; modelMap maps a Claude
// model alias (sonnet, opus, haiku) to a Pi provider/id. A file that cannot
// be converted is reported in its ImportedRole and the others go on.
func ImportClaude(dir string, w Target, modelMap map[string]string) ([]ImportedRole, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("import claude: %w", err)
	}
	var out []ImportedRole
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		src := filepath.Join(dir, e.Name())
		data, err := safefile.ReadFile(src, maxClaudeAgent)
		if err != nil {
			out = append(out, ImportedRole{Source: src, Skipped: err.Error()})
			continue
		}
		r := ConvertClaudeAgent(strings.TrimSuffix(e.Name(), ".md"), data, modelMap)
		r.Source = src
		if r.Skipped != "" {
			out = append(out, r)
			continue
		}
		target := filepath.Join(w.AgentsDir, r.Name+".md")
		if err := create(w, target, r.Data); err != nil {
			r.Skipped = err.Error()
		} else {
			r.Target = target
		}
		out = append(out, r)
	}
	return out, nil
}

// ConvertClaudeAgent turns the text of one Claude Code agent file (stem is
// its file name without .md) into a Pi role file in the pi-herdr-agents
// format: name, a one-line description, Pi's tool names, the model when it
// maps, and the body unchanged.
func ConvertClaudeAgent(stem string, data []byte, modelMap map[string]string) ImportedRole {
	r := ImportedRole{}
	// Claude Code runs on Windows too: CRLF files read as LF ones.
	data = bytes.ReplaceAll(bytes.TrimPrefix(data, []byte("\uFEFF")), []byte("\r\n"), []byte("\n"))
	yaml, start, body, ok := SplitFrontmatter(data)
	if !ok {
		r.Skipped = "no frontmatter (a Claude Code agent file starts with --- and name:, description: lines)"
		return r
	}
	fields, how := claudeFields(yaml, start)
	if how != "" {
		r.Dropped = append(r.Dropped, how)
	}
	name, _ := fields["name"].(string)
	if !ValidName(name) {
		if name != "" {
			r.Mapped = append(r.Mapped, fmt.Sprintf("name: %q is not a role name; the file name %s is", name, stem))
		}
		name = stem
	}
	if !ValidName(name) {
		r.Skipped = fmt.Sprintf("%q is not a role name (letters, digits, '.', '_', '-'); rename the file", stem)
		return r
	}
	r.Name = name
	lines := []string{"---", "name: " + name}
	r.Carried = append(r.Carried, "name")

	if d, ok := fields["description"].(string); ok && strings.TrimSpace(d) != "" {
		line, notes := oneLine(d)
		lines = append(lines, "description: "+line)
		if len(notes) == 0 {
			r.Carried = append(r.Carried, "description")
		}
		for _, n := range notes {
			r.Mapped = append(r.Mapped, "description: "+n)
		}
	} else {
		lines = append(lines, "description: TODO describe what "+name+" does")
		r.Mapped = append(r.Mapped, "description: none in the file; a TODO line was written")
	}

	switch tools, present := claudeToolList(fields["tools"]); {
	case !present:
		r.Dropped = append(r.Dropped, "tools: none listed (Claude Code: every tool); the role gets Pi's default tools")
	default:
		var pi, dropped []string
		for _, t := range tools {
			switch p, ok := ClaudeTools[t]; {
			case ok:
				if !slices.Contains(pi, p) {
					pi = append(pi, p)
				}
				if p != t {
					r.Mapped = append(r.Mapped, "tools: "+t+" → "+p)
				}
			case strings.HasPrefix(t, "mcp__") && plainToolName(t):
				pi = append(pi, t)
				r.Carried = append(r.Carried, "tools: "+t+" (needs the Pi extension of that MCP server)")
			default:
				dropped = append(dropped, t)
			}
		}
		if len(dropped) > 0 {
			r.Dropped = append(r.Dropped, "tools: "+strings.Join(dropped, ", ")+" (no Pi equivalent)")
		}
		if len(pi) == 0 {
			// A role without tools gets Pi's defaults (bash, edit, write
			// among them): more than the agent had.
			r.Skipped = "none of its tools has a Pi equivalent, and a role without tools would get Pi's default tools; write this role by hand"
			return r
		}
		lines = append(lines, "tools: "+strings.Join(pi, ", "))
	}

	// What the agent may not use stays denied.
	deny := map[string]bool{}
	if list, present := claudeToolList(fields["disallowedTools"]); present {
		for _, t := range list {
			if p, ok := ClaudeTools[t]; ok {
				deny[p] = true
				r.Mapped = append(r.Mapped, "disallowedTools: "+t+" → deny-tools: "+p)
			} else {
				r.Dropped = append(r.Dropped, "disallowedTools: "+t+" (no Pi equivalent)")
			}
		}
	}
	if pm, _ := fields["permissionMode"].(string); pm == "plan" {
		for _, p := range []string{"bash", "edit", "write"} {
			deny[p] = true
		}
		r.Mapped = append(r.Mapped, "permissionMode: plan → deny-tools: bash, edit, write (read-only)")
	}
	if len(deny) > 0 {
		names := make([]string, 0, len(deny))
		for p := range deny {
			names = append(names, p)
		}
		sort.Strings(names)
		lines = append(lines, "deny-tools: "+strings.Join(names, ", "))
	}

	if m, ok := fields["model"].(string); ok && m != "" {
		shown, alias := m, m
		if !plainToolName(m) {
			shown, alias = strconv.QuoteToGraphic(m), "ALIAS"
		}
		switch mapped, inMap := modelMap[m]; {
		case m == "inherit":
			r.Dropped = append(r.Dropped, "model: inherit (a role without model runs on the Main's default)")
		case inMap && PlainModel(mapped):
			lines = append(lines, "model: "+mapped)
			r.Mapped = append(r.Mapped, "model: "+m+" → "+mapped)
		case inMap:
			r.Dropped = append(r.Dropped, fmt.Sprintf("model: %s (its --model-map value %s is not provider/id)", shown, strconv.QuoteToGraphic(mapped)))
		case PlainModel(m):
			lines = append(lines, "model: "+m)
			r.Carried = append(r.Carried, "model")
		default:
			r.Dropped = append(r.Dropped, fmt.Sprintf("model: %s (Pi names models provider/id; pass --model-map %s=PROVIDER/ID)", shown, alias))
		}
	}

	var other []string
	for k := range fields {
		switch k {
		case "name", "description", "tools", "model", "disallowedTools":
		default:
			other = append(other, k)
		}
	}
	sort.Strings(other)
	for _, k := range other {
		if k == "permissionMode" {
			if pm, _ := fields[k].(string); pm == "plan" {
				continue
			}
		}
		if iso, _ := fields[k].(string); k == "isolation" && iso == "worktree" {
			r.Dropped = append(r.Dropped, `isolation: worktree (a role has no workspace; a facets profile with "workspace": "worktree" gives each of its Subs its own git worktree)`)
			continue
		}
		r.Dropped = append(r.Dropped, k+" (no Pi role field)")
	}
	lines = append(lines, "---")
	r.Data = []byte(strings.Join(lines, "\n") + "\n" + body)
	if body != "" && !strings.HasSuffix(body, "\n") {
		r.Data = append(r.Data, '\n')
	}
	r.Carried = append(r.Carried, "body")
	return r
}

// PlainModel reports whether model is a provider/id Pi takes, written so
// that a frontmatter line holds it as it is: no white space or control
// character, no YAML indicator first, no comment, no trailing ':'.
func PlainModel(model string) bool {
	provider, id, ok := strings.Cut(model, "/")
	if !ok || provider == "" || id == "" || strings.HasSuffix(model, ":") || strings.Contains(model, ",") {
		return false
	}
	if strings.ContainsAny(model[:1], "\"'[]{}|>&*!%@`#-?:") {
		return false
	}
	for _, r := range model {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '#' || r == '"' || r == '\'' {
			return false
		}
	}
	return true
}

// plainToolName reports whether t is a tool name a frontmatter list can
// hold as it is (an MCP tool: mcp__server__tool).
func plainToolName(t string) bool {
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return t != ""
}

// claudeFields reads a Claude Code frontmatter as YAML; when that fails (a
// plain value holding ": ", which Claude Code's own reader forgives), line
// by line as pi-herdr-agents reads a role, and how says so.
func claudeFields(yaml []byte, start int) (fields map[string]any, how string) {
	f, err := extractYAML(yaml)
	if err == nil {
		v := cuecontext.New().BuildFile(f)
		var m map[string]any
		if v.Err() == nil && v.Decode(&m) == nil {
			return m, ""
		} else if v.Err() != nil {
			err = v.Err()
		} else {
			err = errors.New("the frontmatter is not a mapping")
		}
	}
	m := map[string]any{}
	for _, key := range []string{"name", "description", "tools", "model", "color"} {
		if v, _, ok := FrontmatterLine(yaml, key); ok {
			m[key] = v
		}
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	// "agent.md:N: why" → "line L: why", L the line in the agent file.
	if rest, ok := strings.CutPrefix(first, "agent.md:"); ok {
		if n, why, ok := strings.Cut(rest, ": "); ok {
			if line, err := strconv.Atoi(n); err == nil {
				first = fmt.Sprintf("line %d: %s", start+line-1, why)
			}
		}
	}
	return m, "the frontmatter as YAML (" + first + "); it was read line by line"
}

// extractYAML parses yaml, refusing what the YAML parser cannot take: a
// lone carriage return (it panics on some), and any panic it raises.
func extractYAML(yaml []byte) (f *ast.File, err error) {
	if bytes.IndexByte(yaml, '\r') >= 0 {
		return nil, errors.New("agent.md:1: a lone carriage return")
	}
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("agent.md:1: the YAML parser failed (%v)", r)
		}
	}()
	return cueyaml.Extract("agent.md", yaml)
}

// claudeToolList reads Claude Code's tools: a comma list, or a YAML list.
func claudeToolList(v any) (tools []string, present bool) {
	switch x := v.(type) {
	case string:
		for _, t := range strings.Split(x, ",") {
			if t = strings.TrimSpace(t); t != "" {
				tools = append(tools, t)
			}
		}
		return tools, true
	case []any:
		for _, t := range x {
			if s, ok := t.(string); ok && strings.TrimSpace(s) != "" {
				tools = append(tools, strings.TrimSpace(s))
			}
		}
		return tools, true
	}
	return nil, false
}

// oneLine makes a description one plain line that YAML and pi-herdr-agents
// read alike, with a note for each change made.
func oneLine(d string) (string, []string) {
	var notes []string
	if strings.ContainsAny(d, "\n\r") {
		notes = append(notes, "its lines joined into one")
	}
	line := strings.Join(strings.Fields(d), " ")
	if strings.Contains(line, " #") {
		// YAML would end the value there; pi-herdr-agents would not.
		line = strings.ReplaceAll(line, " #", " ＃")
		notes = append(notes, `" #" written as " ＃" (YAML reads " #" as a comment)`)
	}
	if strings.ContainsAny(line[:1], "\"'[{|>&*!%@`#-?:,") {
		line = "— " + line
		notes = append(notes, "\"— \" put before a leading "+line[len("— "):len("— ")+1]+" (YAML would read it as syntax)")
	}
	return line, notes
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
)

// The docs test keeps README.md, CONTRIBUTING.md and docs/*.md honest (the
// rules are in CONTRIBUTING.md, "Documentation"): the facets lines of every
// fenced block marked `sh runnable` are parsed by the real command tree and
// the safe ones run in a sandbox, and every relative link resolves.

// runnableInfo is the info string that marks a fenced block as runnable.
const runnableInfo = "sh runnable"

// executed are the subcommands a runnable block really runs: they read the
// sandbox's files and write only below its working directory and HOME.
// Every other facets command (pi-extension, delegate, channel, …) is only
// parsed.
var executed = []string{"check", "compile", "explain", "schema", "profiles", "verify", "new", "completion"}

// docFiles lists the documentation files below root in the order their
// blocks run: README.md first, then docs/*.md by name, then CONTRIBUTING.md.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatalf("no docs/*.md below %s", root)
	}
	slices.Sort(pages)
	return append(append([]string{filepath.Join(root, "README.md")}, pages...), filepath.Join(root, "CONTRIBUTING.md"))
}

// TestDocs checks the real documentation.
func TestDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "facets", "main.go")); err != nil {
		t.Fatalf("`go run ./cmd/facets` in the docs needs this package at cmd/facets: %v", err)
	}
	// README.md is the front door; the reference belongs in docs/.
	const maxREADMELines = 300
	if readme, err := os.ReadFile(filepath.Join(root, "README.md")); err != nil {
		t.Error(err)
	} else if n := bytes.Count(readme, []byte("\n")); n > maxREADMELines {
		t.Errorf("README.md has %d lines, over %d: move reference text to a docs/ page", n, maxREADMELines)
	}
	r := newDocsRun(t, root)
	for _, f := range docFiles(t, root) {
		r.checkFile(f)
	}
	for _, p := range r.problems {
		t.Error(p)
	}
	t.Logf("%d runnable facets lines parsed, %d of them run; %d relative links", r.parsed, r.ran, r.links)
	// A marker renamed or dropped by accident would make this test vacuous.
	if r.ran < 10 || r.parsed < 15 || r.links < 20 {
		t.Errorf("the docs test checked only %d runnable lines (%d run) and %d links; is the %q marker still used?", r.parsed, r.ran, r.links, runnableInfo)
	}
}

// TestCIRunsTheREADMETests: .ci/run ends with the test command the README
// gives a newcomer, so CI runs exactly what the README promises.
func TestCIRunsTheREADMETests(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "Run the tests")
	if !ok {
		t.Fatal("README.md has no \"Run the tests\" paragraph")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	want := strings.TrimSpace(block)
	if !ok || want == "" || strings.Contains(want, "\n") {
		t.Fatalf("README.md's test command is not one line in a sh block: %q", block)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ci)), "\n")
	if got := strings.TrimSpace(lines[len(lines)-1]); got != want {
		t.Errorf(".ci/run ends with %q; the README's test command is %q", got, want)
	}
}

// TestLayoutListsEveryPackage: CONTRIBUTING.md's Layout block has a line
// for every package of the module, so the tree a newcomer reads is the
// real one.
func TestLayoutListsEveryPackage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(data), "\n## Layout\n")
	if !ok {
		t.Fatal("CONTRIBUTING.md has no ## Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	listed := map[string]bool{}
	for _, line := range strings.Split(layout, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			listed[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	var missing []string
	packages := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if _, err := build.ImportDir(path, 0); err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			return err
		}
		packages++
		if rel, _ := filepath.Rel(root, path); !listed[filepath.ToSlash(rel)] {
			missing = append(missing, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if packages < 20 {
		t.Fatalf("found only %d packages below %s", packages, root)
	}
	if len(missing) > 0 {
		t.Errorf("CONTRIBUTING.md's Layout has no line for %s", strings.Join(missing, ", "))
	}
	// The design card's folders: a new package goes under one of them.
	card := []string{"cmd", "cue", "profiles", "compiler", "runtime", "herdr", "internal", "testdata", "docs"}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !slices.Contains(card, e.Name()) {
			t.Errorf("top-level folder %s/ is not one of the design card's (%s): put it under one of them", e.Name(), strings.Join(card, ", "))
		}
	}
}

// TestDocsCatchesBreakage feeds the checker broken pages: each must be
// reported, and a correct page must not.
func TestDocsCatchesBreakage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	block := func(lines ...string) string {
		return "# T\n\n## A heading, with `code`\n\n```" + runnableInfo + "\n" + strings.Join(lines, "\n") + "\n```\n"
	}
	for _, tc := range []struct {
		name, page string
		want       string // a substring of the only problem; "" for none
	}{
		{"clean", block("facets check   # no profiles: a warning", "facets pi-extension --path", "pi --profile x") +
			"[self](#a-heading-with-code) [file](page.md) [dir](.) [web](https://example.com/nope)\n", ""},
		{"unknown command", block("facets chek"), `unknown command "chek"`},
		{"unknown flag", block("facets check --stirct"), "unknown flag: --stirct"},
		{"unknown flag of a parsed-only command", block("facets pi-extension --paht"), "unknown flag: --paht"},
		{"too many arguments", block("facets verify a.json b.json"), "accepts 1 arg"},
		{"needs a subcommand", block("facets new"), "needs a subcommand"},
		{"exit status", block("facets explain nosuch"), "exited 1, want 0"},
		{"named exit status", block("facets check   # exit 1"), "exited 0, want 1"},
		{"go run form", block("go run ./cmd/facets compile --no-such-flag"), "unknown flag: --no-such-flag"},
		{"cd", block("cd nowhere"), "cd nowhere"},
		{"shell syntax", block("facets check | head"), "not a simple command"},
		{"broken link", "[x](missing.md)\n", "missing.md"},
		{"broken anchor", "# T\n\n[x](#no-such-heading)\n", "#no-such-heading"},
		{"broken anchor in another file", "[x](page.md#nope)\n", "page.md#nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			page := filepath.Join(dir, "page.md")
			if err := os.WriteFile(page, []byte(tc.page), 0o600); err != nil {
				t.Fatal(err)
			}
			r := newDocsRun(t, root)
			r.checkFile(page)
			switch {
			case tc.want == "" && len(r.problems) > 0:
				t.Errorf("a correct page has problems:\n%s", strings.Join(r.problems, "\n"))
			case tc.want != "" && (len(r.problems) != 1 || !strings.Contains(r.problems[0], tc.want)):
				t.Errorf("want one problem containing %q, got %d:\n%s", tc.want, len(r.problems), strings.Join(r.problems, "\n"))
			}
		})
	}
}

// docsRun is one sandbox the runnable blocks run in, and what they found.
type docsRun struct {
	t       *testing.T
	root    string // the module root
	sandbox string // the working directory each file starts in
	home    string
	facets  string // the facets executable (this test binary, see TestMain)

	problems           []string
	parsed, ran, links int
	headings           map[string][]string // file → its heading ids
}

func newDocsRun(t *testing.T, root string) *docsRun {
	t.Helper()
	facets, err := exec.LookPath("facets")
	if err != nil {
		t.Fatalf("TestMain puts facets on PATH: %v", err)
	}
	sandbox := t.TempDir()
	example := filepath.Join("testdata", "example")
	if err := os.CopyFS(filepath.Join(sandbox, example), os.DirFS(filepath.Join(root, example))); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	return &docsRun{t: t, root: root, sandbox: sandbox, home: home, facets: facets, headings: map[string][]string{}}
}

func (r *docsRun) problem(file string, line int, format string, args ...any) {
	if rel, err := filepath.Rel(r.root, file); err == nil && !strings.HasPrefix(rel, "..") {
		file = rel
	}
	r.problems = append(r.problems, fmt.Sprintf("%s:%d: %s", file, line, fmt.Sprintf(format, args...)))
}

// fence is one fenced code block of a Markdown file.
type fence struct {
	info  string
	line  int // of the first content line
	lines []string
}

// splitMarkdown returns a file's fenced blocks and its other lines (with
// their numbers), where links and headings are.
func splitMarkdown(data string) (fences []fence, prose map[int]string) {
	prose = map[int]string{}
	open := regexp.MustCompile("^ {0,3}(```+|~~~+)\\s*(.*)$")
	var cur *fence
	var marker string
	for i, line := range strings.Split(data, "\n") {
		n := i + 1
		if cur != nil {
			if strings.HasPrefix(strings.TrimSpace(line), marker) && strings.Trim(strings.TrimSpace(line), marker[:1]) == "" {
				fences = append(fences, *cur)
				cur = nil
				continue
			}
			cur.lines = append(cur.lines, line)
			continue
		}
		if m := open.FindStringSubmatch(line); m != nil {
			cur, marker = &fence{info: strings.TrimSpace(m[2]), line: n + 1}, m[1]
			continue
		}
		prose[n] = line
	}
	return fences, prose
}

func (r *docsRun) checkFile(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		r.problem(file, 0, "%v", err)
		return
	}
	fences, prose := splitMarkdown(string(data))
	r.checkLinks(file, prose)
	sh := &shellState{cwd: r.sandbox, env: map[string]string{
		"HOME":            r.home,
		"PATH":            os.Getenv("PATH"),
		"XDG_RUNTIME_DIR": filepath.Join(r.home, ".xdg"),
	}}
	for _, f := range fences {
		if f.info != runnableInfo {
			continue
		}
		for _, l := range joinContinuations(f) {
			r.runLine(file, l.n, l.text, sh)
		}
	}
}

type numberedLine struct {
	n    int
	text string
}

// joinContinuations joins lines that end in a backslash.
func joinContinuations(f fence) []numberedLine {
	var out []numberedLine
	for i := 0; i < len(f.lines); i++ {
		l := numberedLine{f.line + i, f.lines[i]}
		for strings.HasSuffix(l.text, `\`) && i+1 < len(f.lines) {
			i++
			l.text = strings.TrimSuffix(l.text, `\`) + " " + f.lines[i]
		}
		out = append(out, l)
	}
	return out
}

// shellState is what `cd` and `export` change, for the rest of a file.
type shellState struct {
	cwd string
	env map[string]string
}

func (s *shellState) lookup(name string) string {
	if name == "PWD" {
		return s.cwd
	}
	return s.env[name]
}

// runLine checks one line of a runnable block.
func (r *docsRun) runLine(file string, n int, line string, sh *shellState) {
	words, comment, err := splitShell(line, sh)
	if err != nil {
		r.problem(file, n, "%s: %v", line, err)
		return
	}
	assign := map[string]string{}
	for len(words) > 0 && isAssignment(words[0]) {
		k, v, _ := strings.Cut(words[0], "=")
		assign[k] = v
		words = words[1:]
	}
	switch {
	case len(words) == 0:
		return
	case words[0] == "cd" && len(words) == 2:
		dir := words[1]
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(sh.cwd, dir)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			r.problem(file, n, "cd %s: not a directory in the sandbox", words[1])
			return
		}
		sh.cwd = dir
		return
	case words[0] == "export":
		for _, w := range words[1:] {
			k, v, ok := strings.Cut(w, "=")
			if !ok || !isAssignment(w) {
				r.problem(file, n, "export %s: want NAME=VALUE", w)
				return
			}
			sh.env[k] = v
		}
		return
	case words[0] == "facets":
		words = words[1:]
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/facets":
		words = words[3:]
	default:
		return // not facets: pi, npm, go test, …
	}
	if slices.ContainsFunc(words, isOperator) {
		r.problem(file, n, "%s: not a simple command (no pipes, redirections or lists in runnable lines)", line)
		return
	}
	r.parsed++
	cmd, err := parseFacets(words)
	if err != nil {
		r.problem(file, n, "facets %s: %v", strings.Join(words, " "), err)
		return
	}
	if !slices.Contains(executed, cmd) {
		return
	}
	want := 0
	if m := regexp.MustCompile(`\bexit (\d+)\b`).FindStringSubmatch(comment); m != nil {
		want, _ = strconv.Atoi(m[1])
	}
	r.ran++
	c := exec.Command(r.facets, words...)
	c.Dir = sh.cwd
	for k, v := range sh.env {
		c.Env = append(c.Env, k+"="+v)
	}
	for k, v := range assign {
		c.Env = append(c.Env, k+"="+v)
	}
	c.Env = append(c.Env, "PWD="+sh.cwd)
	var output bytes.Buffer
	c.Stdout, c.Stderr = &output, &output
	err = c.Run()
	var exit *exec.ExitError
	got := 0
	switch {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		r.problem(file, n, "facets %s: %v", strings.Join(words, " "), err)
		return
	}
	r.t.Logf("%s:%d: facets %s (in %s): exit %d", filepath.Base(file), n, strings.Join(words, " "), sh.cwd, got)
	if got != want {
		r.problem(file, n, "facets %s (in %s): exited %d, want %d; output:\n%s", strings.Join(words, " "), sh.cwd, got, want, output.String())
	}
}

// parseFacets parses args with the real command tree, as Execute would,
// without running anything, and returns the name of the subcommand ("version"
// for --version).
func parseFacets(args []string) (string, error) {
	root := newRootCmd(&app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return "", err
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return "", err
	}
	if v, _ := cmd.Flags().GetBool("version"); v && cmd == root {
		return "version", nil
	}
	// A command that groups subcommands only prints its help when run alone.
	if !cmd.Runnable() || cmd.Annotations[groupAnnotation] != "" && len(cmd.Flags().Args()) == 0 {
		return "", fmt.Errorf("%q needs a subcommand", cmd.CommandPath())
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return "", err
	}
	if cmd.HasParent() && cmd.Parent() != root {
		return topLevel(cmd).Name(), nil
	}
	return cmd.Name(), nil
}

// topLevel returns the child of the root command that cmd is below.
func topLevel(cmd *cobra.Command) *cobra.Command {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	return cmd
}

func isAssignment(w string) bool {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(w)
}

// operatorWord marks an unquoted shell operator in splitShell's output.
const operatorWord = "\x00op"

func isOperator(w string) bool { return strings.HasPrefix(w, operatorWord) }

// splitShell splits one line as sh would for a simple command: quotes,
// backslashes, $NAME, ${NAME} and a leading ~ are expanded from sh, a $(…)
// stays as written, and an unquoted # starts the comment, which is returned.
// Unquoted operators (| & ; < > ( )) come back as operatorWord.
func splitShell(line string, sh *shellState) (words []string, comment string, err error) {
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	rs := []rune(line)
	expand := func(i int) (int, error) { // rs[i] == '$'
		switch {
		case i+1 < len(rs) && rs[i+1] == '{':
			end := slices.Index(rs[i:], '}')
			if end < 0 {
				return 0, errors.New("unclosed ${")
			}
			cur.WriteString(sh.lookup(string(rs[i+2 : i+end])))
			return i + end, nil
		case i+1 < len(rs) && rs[i+1] == '(':
			depth, j := 0, i+1
			for ; j < len(rs); j++ {
				if rs[j] == '(' {
					depth++
				} else if rs[j] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j == len(rs) {
				return 0, errors.New("unclosed $(")
			}
			cur.WriteString(string(rs[i : j+1]))
			return j, nil
		default:
			j := i + 1
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			if j == i+1 {
				cur.WriteRune('$')
				return i, nil
			}
			cur.WriteString(sh.lookup(string(rs[i+1 : j])))
			return j - 1, nil
		}
	}
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			return words, string(rs[i+1:]), nil
		case c == '~' && !inWord && (i+1 == len(rs) || rs[i+1] == '/' || rs[i+1] == ' '):
			inWord = true
			cur.WriteString(sh.lookup("HOME"))
		case c == '\\':
			inWord = true
			if i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
			}
		case c == '\'':
			inWord = true
			end := slices.Index(rs[i+1:], '\'')
			if end < 0 {
				return nil, "", errors.New("unclosed '")
			}
			cur.WriteString(string(rs[i+1 : i+1+end]))
			i += end + 1
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i == len(rs) {
					return nil, "", errors.New(`unclosed "`)
				}
				if rs[i] == '"' {
					break
				}
				switch {
				case rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune(`$"\`+"`", rs[i+1]):
					i++
					cur.WriteRune(rs[i])
				case rs[i] == '$':
					if i, err = expand(i); err != nil {
						return nil, "", err
					}
				default:
					cur.WriteRune(rs[i])
				}
			}
		case c == '$':
			inWord = true
			if i, err = expand(i); err != nil {
				return nil, "", err
			}
		case strings.ContainsRune("|&;<>()`", c):
			flush()
			words = append(words, operatorWord+string(c))
		default:
			inWord = true
			cur.WriteRune(c)
		}
	}
	flush()
	return words, "", nil
}

var (
	linkRE    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refDefRE  = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s+(\S+)`)
	codeRE    = regexp.MustCompile("`+[^`]*`+")
	headingRE = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
)

// checkLinks checks that every relative link of a file's prose names an
// existing file and that an #anchor names a heading there.
func (r *docsRun) checkLinks(file string, prose map[int]string) {
	lines := slices.Sorted(maps.Keys(prose))
	for _, n := range lines {
		text := codeRE.ReplaceAllString(prose[n], "")
		var targets []string
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		if m := refDefRE.FindStringSubmatch(text); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
				continue // https:, mailto:
			}
			r.links++
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if _, err := os.Stat(dest); err != nil {
					r.problem(file, n, "link %s: no such file", target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !slices.Contains(r.headingIDs(dest), strings.ToLower(anchor)) {
				r.problem(file, n, "link %s: no heading %q in %s (headings: %s)", target, "#"+anchor, filepath.Base(dest), strings.Join(r.headingIDs(dest), ", "))
			}
		}
	}
}

// headingIDs returns the ids GitHub gives a Markdown file's headings.
func (r *docsRun) headingIDs(file string) []string {
	if ids, ok := r.headings[file]; ok {
		return ids
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	_, prose := splitMarkdown(string(data))
	seen := map[string]int{}
	var ids []string
	for _, n := range slices.Sorted(maps.Keys(prose)) {
		m := headingRE.FindStringSubmatch(prose[n])
		if m == nil {
			continue
		}
		id := headingID(m[1])
		if k := seen[id]; k > 0 {
			seen[id]++
			id = fmt.Sprintf("%s-%d", id, k)
		} else {
			seen[id] = 1
		}
		ids = append(ids, id)
	}
	r.headings[file] = ids
	return ids
}

// headingID is GitHub's id for a heading: the rendered text in lower case,
// punctuation other than - and _ dropped, spaces as hyphens.
func headingID(heading string) string {
	text := regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, c := range strings.ToLower(text) {
		switch {
		case c == ' ':
			b.WriteRune('-')
		case c == '-' || c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.IsMark(c):
			b.WriteRune(c)
		}
	}
	return b.String()
}

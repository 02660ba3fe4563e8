package main

// The recipes a team copies into its repository, run as the README and
// docs/ show them: the GitHub Actions workflows, the pre-commit
// configuration (with the real pre-commit) and the VS Code settings.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue/cuecontext"
	cueyaml "cuelang.org/go/encoding/yaml"

	"github.com/facets-dev/facets/internal/envvar"
)

const (
	recipeRoot = "../.."
	// moduleURL is the repository the snippets name.
	moduleURL = "https://github.com/facets-dev/facets"
)

// snippet is one fenced block of the README or docs/.
type snippet struct {
	where string // file:line, for messages
	text  string
}

// snippets returns the fenced blocks of README.md and docs/*.md whose info
// string is lang and whose text contains every one of marks.
func snippets(t *testing.T, lang string, marks ...string) []snippet {
	t.Helper()
	var out []snippet
	for _, file := range docFiles(t, recipeRoot) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fences, _ := splitMarkdown(string(data))
		for _, f := range fences {
			text := strings.Join(f.lines, "\n") + "\n"
			if strings.Fields(f.info + " x")[0] != lang || !containsAll(text, marks) {
				continue
			}
			out = append(out, snippet{fmt.Sprintf("%s:%d", filepath.Base(file), f.line), text})
		}
	}
	return out
}

// oneSnippet is the single snippet snippets finds.
func oneSnippet(t *testing.T, lang string, marks ...string) snippet {
	t.Helper()
	s := snippets(t, lang, marks...)
	if len(s) != 1 {
		t.Fatalf("want one %s block containing %q in README.md and docs/, found %d", lang, marks, len(s))
	}
	return s[0]
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// decodeYAML decodes a YAML document (with CUE's YAML reader, already a
// dependency) into plain Go values.
func decodeYAML(t *testing.T, name, text string) map[string]any {
	t.Helper()
	f, err := cueyaml.Extract(name, []byte(text))
	if err != nil {
		t.Fatalf("%s: parse YAML: %v", name, err)
	}
	var m map[string]any
	if err := cuecontext.New().BuildFile(f).Decode(&m); err != nil {
		t.Fatalf("%s: decode YAML: %v", name, err)
	}
	return m
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	goodProfile   = `{"version":1,"name":"good","tools":["read"]}` + "\n"
	brokenProfile = `{"version":1,"name":"bad"}` + "\n"
	scoutRole     = "---\nname: scout\ndescription: Scouts the code.\n---\nScout.\n"
)

// workflow is what a GitHub Actions snippet runs: its env and the run:
// lines of its steps (a whole workflow's jobs, or a fragment's steps), and
// the facets commands its comments say to run once first.
type workflow struct {
	env     map[string]string
	runs    []string
	once    [][]string
	install []string
}

func parseWorkflow(t *testing.T, s snippet) workflow {
	t.Helper()
	doc := decodeYAML(t, s.where, s.text)
	w := workflow{env: map[string]string{}}
	addEnv := func(v any) {
		m, _ := v.(map[string]any)
		for k, v := range m {
			w.env[k] = fmt.Sprint(v)
		}
	}
	addSteps := func(v any) {
		steps, _ := v.([]any)
		for _, st := range steps {
			m, _ := st.(map[string]any)
			run, ok := m["run"].(string)
			if !ok {
				continue
			}
			if strings.HasPrefix(run, "go install ") {
				w.install = append(w.install, strings.TrimPrefix(run, "go install "))
				continue
			}
			w.runs = append(w.runs, run)
		}
	}
	addEnv(doc["env"])
	addSteps(doc["steps"])
	jobs, _ := doc["jobs"].(map[string]any)
	for _, j := range jobs {
		m, _ := j.(map[string]any)
		addEnv(m["env"])
		addSteps(m["steps"])
	}
	for _, line := range strings.Split(s.text, "\n") {
		if c := strings.TrimSpace(line); strings.HasPrefix(c, "#") {
			if words := strings.Fields(strings.TrimPrefix(c, "#")); len(words) > 0 && words[0] == "facets" {
				w.once = append(w.once, words)
			}
		}
	}
	return w
}

// run runs the workflow's facets commands (once with the once lines
// first) in the checkout ws, as GitHub would: there, with
// GITHUB_WORKSPACE and the snippet's env (${{ github.workspace }} is ws),
// and a HOME of its own. It returns the last exit code and all output.
func (w workflow) run(t *testing.T, ws, home string, once bool) (int, string) {
	t.Helper()
	env := map[string]string{envvar.GitHubWorkspace: ws, envvar.Home: home}
	for k, v := range w.env {
		env[k] = strings.ReplaceAll(v, "${{ github.workspace }}", ws)
	}
	var lines [][]string
	if once {
		lines = append(lines, w.once...)
	}
	for _, r := range w.runs {
		lines = append(lines, strings.Fields(r))
	}
	t.Chdir(ws)
	var all strings.Builder
	code := exitOK
	for _, words := range lines {
		if words[0] != "facets" {
			t.Fatalf("step %q: want a facets command", strings.Join(words, " "))
		}
		c, out, errOut := runApp(t, env, "", words[1:]...)
		fmt.Fprintf(&all, "$ %s\n%s%s", strings.Join(words, " "), out, errOut)
		code = c
		if c != exitOK {
			break
		}
	}
	return code, all.String()
}

// checkInstall checks a workflow's go install step: facets' command at
// @latest, a tag or a commit.
func checkInstall(t *testing.T, s snippet, w workflow) {
	t.Helper()
	if len(w.install) != 1 {
		t.Fatalf("%s: want one go install step, got %q", s.where, w.install)
	}
	pkg, version, ok := strings.Cut(w.install[0], "@")
	if !ok || pkg != "github.com/facets-dev/facets/cmd/facets" {
		t.Errorf("%s: go install %s: want github.com/facets-dev/facets/cmd/facets@VERSION", s.where, w.install[0])
	}
	if !regexp.MustCompile(`^(latest|v\d+\.\d+\.\d+|[0-9a-f]{40})$`).MatchString(version) {
		t.Errorf("%s: go install ...@%s: want @latest, a release tag or a commit sha", s.where, version)
	}
}

// TestGitHubActionsRecipes runs the workflows of the README (check) and
// docs/manifest.md (verify a committed manifest) as written, and makes
// sure no other workflow snippet runs facets untested.
func TestGitHubActionsRecipes(t *testing.T) {
	all := snippets(t, "yaml", "run: facets ")
	check := oneSnippet(t, "yaml", "# .github/workflows/facets.yml")
	verify := oneSnippet(t, "yaml", "run: facets verify")
	for _, s := range all {
		if s != check && s != verify {
			t.Errorf("%s: a workflow snippet that runs facets but no test does: add it to TestGitHubActionsRecipes", s.where)
		}
	}

	t.Run("check", func(t *testing.T) {
		w := parseWorkflow(t, check)
		checkInstall(t, check, w)
		ws, home := t.TempDir(), t.TempDir()
		// A runner (or a developer's machine) with a broken personal
		// profile: the repository check must not see it.
		writeFiles(t, home, map[string]string{".pi/agent/facets/profiles/bad/config.json": brokenProfile})
		writeFiles(t, ws, map[string]string{
			".git/HEAD":                            "ref: refs/heads/main\n",
			".pi/facets/profiles/good/config.json": goodProfile,
			".pi/agents/scout.md":                  scoutRole,
		})
		if code, out := w.run(t, ws, home, false); code != exitOK || strings.Contains(out, "::") {
			t.Fatalf("%s on a clean repository: exit %d\n%s", check.where, code, out)
		}
		writeFiles(t, ws, map[string]string{".pi/facets/profiles/bad/config.json": brokenProfile})
		code, out := w.run(t, ws, home, false)
		if code != exitDiagnostics || !strings.Contains(out, "::error file=.pi/facets/profiles/bad/config.json,line=1,col=1,title=facets missing-field::") {
			t.Fatalf("%s on a broken repository profile: exit %d, want 1 and an annotation on .pi/facets/profiles/bad/config.json\n%s", check.where, code, out)
		}
		if strings.Contains(out, home) {
			t.Errorf("%s: the check read the home directory:\n%s", check.where, out)
		}
	})

	t.Run("verify", func(t *testing.T) {
		w := parseWorkflow(t, verify)
		checkInstall(t, verify, w)
		if len(w.once) == 0 {
			t.Fatalf("%s: no commented facets compile to run once", verify.where)
		}
		ws, home := filepath.Join(t.TempDir(), "work", "repo"), t.TempDir()
		writeFiles(t, ws, map[string]string{
			".git/HEAD":                            "ref: refs/heads/main\n",
			".pi/facets/profiles/good/config.json": goodProfile,
		})
		if code, out := w.run(t, ws, home, true); code != exitOK || strings.Contains(out, "::") {
			t.Fatalf("%s: compile once, then verify: exit %d\n%s", verify.where, code, out)
		}
		// A copy of the checkout with the committed manifest.
		copyTree(t, ws, ws+"-copy")
		writeFiles(t, ws, map[string]string{".pi/facets/profiles/good/config.json": `{"version":1,"name":"good","tools":["read","grep"]}`})
		code, out := w.run(t, ws, home, false)
		if code != exitDiagnostics || !strings.Contains(out, "::error file=.pi/facets/profiles/good/config.json,title=facets source-changed::") {
			t.Errorf("%s after an edit: exit %d, want 1 and a source-changed annotation\n%s", verify.where, code, out)
		}
		code, out = w.run(t, ws+"-copy", home, false)
		if code != exitDiagnostics || !strings.Contains(out, "title=facets manifest-moved::") {
			t.Errorf("%s in a copy of the checkout: exit %d, want 1 and manifest-moved\n%s", verify.where, code, out)
		}
	})
}

// copyTree copies the regular files and directories below src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVSCodeRecipe checks the README's .vscode/settings.json: after
// facets schema --install --project, its url names the installed schema,
// and its fileMatch patterns select the profiles facets new writes (both
// forms) and nothing else facets writes there.
func TestVSCodeRecipe(t *testing.T) {
	s := oneSnippet(t, "json", `"json.schemas"`)
	var settings struct {
		Schemas []struct {
			FileMatch []string `json:"fileMatch"`
			URL       string   `json:"url"`
		} `json:"json.schemas"`
	}
	if err := json.Unmarshal([]byte(s.text), &settings); err != nil {
		t.Fatalf("%s: %v", s.where, err)
	}
	if len(settings.Schemas) != 1 {
		t.Fatalf("%s: want one json.schemas entry, got %d", s.where, len(settings.Schemas))
	}
	entry := settings.Schemas[0]
	ws := t.TempDir()
	env := map[string]string{envvar.Home: t.TempDir()}
	for _, args := range [][]string{
		{"schema", "--install", "--project", "-C", ws},
		{"new", "profile", "reviewer", "--project", "-C", ws},
		{"new", "profile", "quick", "--legacy", "--project", "-C", ws},
		{"new", "role", "scout", "--project", "-C", ws},
	} {
		if code, out, errOut := runApp(t, env, "", args...); code != exitOK {
			t.Fatalf("facets %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	schema := filepath.Join(ws, filepath.FromSlash(strings.TrimPrefix(entry.URL, "./")))
	installed, err := os.ReadFile(schema)
	if err != nil {
		t.Fatalf("%s: url %s does not name the installed schema: %v", s.where, entry.URL, err)
	}
	_, printed, _ := runApp(t, env, "", "schema")
	if string(installed) != printed {
		t.Errorf("%s: %s is not the schema facets schema prints", s.where, entry.URL)
	}
	// fileMatch as VS Code reads it: a glob against the workspace-relative
	// path, where **/ matches any leading directories (or none).
	matches := func(rel string) bool {
		for _, pat := range entry.FileMatch {
			for _, p := range []string{pat, strings.TrimPrefix(pat, "**/")} {
				if ok, _ := path.Match(p, rel); ok {
					return true
				}
			}
		}
		return false
	}
	for rel, want := range map[string]bool{
		".pi/facets/profiles/reviewer/config.json":     true,
		".pi/facets/profiles/quick.json":               true,
		".pi/facets/profile.schema.json":               false,
		".pi/facets/profiles/reviewer/instructions.md": false,
		".pi/agents/scout.md":                          false,
	} {
		if _, err := os.Stat(filepath.Join(ws, rel)); err != nil {
			t.Fatalf("facets wrote no %s: %v", rel, err)
		}
		if got := matches(rel); got != want {
			t.Errorf("%s: fileMatch %q selects %s = %v, want %v", s.where, entry.FileMatch, rel, got, want)
		}
	}
}

// TestPreCommitRecipe runs the README's .pre-commit-config.yaml with the
// real pre-commit (Debian's; .ci/run installs it): this module, committed
// into a temporary repository, is the snippet's repo:, and the steps are
// the README's (pre-commit autoupdate --freeze, then pre-commit run).
// The repository under test has a good profile and a role, while the
// committer's ~/.pi/agent holds a broken profile, which the hook ignores.
func TestPreCommitRecipe(t *testing.T) {
	for _, tool := range []string{"pre-commit", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed; this test runs the real pre-commit (apt-get install -y pre-commit git, as .ci/run does): %v", tool, err)
		}
	}
	s := oneSnippet(t, "yaml", "# .pre-commit-config.yaml")
	if !strings.Contains(s.text, "repo: "+moduleURL+"\n") || !strings.Contains(s.text, "id: facets-check") {
		t.Fatalf("%s: want repo: %s and id: facets-check\n%s", s.where, moduleURL, s.text)
	}
	if !strings.Contains(s.text, "pre-commit autoupdate --freeze") {
		t.Fatalf("%s: the snippet must say how rev: gets pinned (pre-commit autoupdate --freeze)", s.where)
	}

	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	env := preCommitEnv(t, home, filepath.Join(tmp, "pre-commit"))
	git := func(dir string, args ...string) string {
		t.Helper()
		return runTool(t, env, dir, "git", args...)
	}

	// This module as a repository pre-commit can clone, at one commit.
	src := filepath.Join(tmp, "facets")
	copyModule(t, src)
	git(src, "init", "-q")
	git(src, "add", "-A")
	git(src, "commit", "-q", "-m", "facets under test")
	sha := strings.TrimSpace(git(src, "rev-parse", "HEAD"))

	writeFiles(t, home, map[string]string{".pi/agent/facets/profiles/bad/config.json": brokenProfile})
	repo := filepath.Join(tmp, "repo")
	writeFiles(t, repo, map[string]string{
		".pi/facets/profiles/good/config.json": goodProfile,
		".pi/agents/scout.md":                  scoutRole,
		".pre-commit-config.yaml":              strings.Replace(s.text, moduleURL, src, 1),
	})
	git(repo, "init", "-q")
	git(repo, "add", "-A")

	runTool(t, env, repo, "pre-commit", "autoupdate", "--freeze")
	cfg, err := os.ReadFile(filepath.Join(repo, ".pre-commit-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*rev: ` + sha + `\b`).Match(cfg) {
		t.Fatalf("pre-commit autoupdate --freeze did not pin rev: to %s:\n%s", sha, cfg)
	}
	git(repo, "add", "-A")

	preCommit := func(want int) string {
		t.Helper()
		cmd := exec.Command("pre-commit", "run", "--all-files")
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		code := cmd.ProcessState.ExitCode()
		if code != want {
			t.Fatalf("pre-commit run --all-files: exit %d (%v), want %d\n%s", code, err, want, out)
		}
		return string(out)
	}
	out := preCommit(0)
	if !regexp.MustCompile(`facets check\.+Passed`).MatchString(out) {
		t.Errorf("the hook did not run and pass:\n%s", out)
	}

	// What the hook installed: facets alone, at the pinned commit.
	bins, err := filepath.Glob(filepath.Join(tmp, "pre-commit", "repo*", "golangenv-*", "bin", "*"))
	if err != nil || len(bins) == 0 {
		t.Fatalf("no hook binaries found: %v", err)
	}
	var names []string
	for _, b := range bins {
		names = append(names, filepath.Base(b))
		if !strings.Contains(b, "golangenv-system") {
			t.Errorf("%s: pre-commit did not build with the system Go", b)
		}
	}
	if !slices.Equal(names, []string{"facets"}) {
		t.Errorf("the hook's go install ./... installed %v, want only facets", names)
	}
	version := runTool(t, env, repo, bins[0], "version")
	if !strings.HasPrefix(version, "facets version v0.0.0-") || !strings.Contains(version, sha[:12]) {
		t.Errorf("facets version of the hook's binary = %q, want the pseudo-version of %s", version, sha[:12])
	}

	// A repository that keeps only roles passes too.
	git(repo, "rm", "-q", "-r", "-f", ".pi/facets")
	preCommit(0)

	// The repository's own broken profile fails the commit, named, also
	// in a subdirectory's .pi (which the hook's files: filter fires on).
	writeFiles(t, repo, map[string]string{"svc/.pi/facets/profiles/bad/config.json": brokenProfile})
	git(repo, "add", "-A")
	out = preCommit(1)
	if !strings.Contains(out, "svc/.pi/facets/profiles/bad/config.json:1:1: error: missing required field \"tools\"") {
		t.Errorf("the hook did not name the repository's broken profile:\n%s", out)
	}
	if strings.Contains(out, home) {
		t.Errorf("the hook read the committer's home:\n%s", out)
	}

	// Installed as a git hook, it judges every commit, also one that only
	// deletes: a skill directory a profile names, or the last profile.
	git(repo, "rm", "-q", "-r", "-f", "svc", ".pi/agents")
	writeFiles(t, repo, map[string]string{
		".pi/facets/profiles/good/config.json": `{"version":1,"name":"good","tools":["read"],"skills":["lint"]}`,
		".pi/skills/lint/SKILL.md":             "---\nname: lint\ndescription: Lints.\n---\nLint.\n",
	})
	git(repo, "add", "-A")
	runTool(t, env, repo, "pre-commit", "install")
	git(repo, "commit", "-q", "-m", "a profile and its skill")
	commit := func(msg string) (int, string) {
		t.Helper()
		cmd := exec.Command("git", "commit", "-q", "-m", msg)
		cmd.Dir, cmd.Env = repo, env
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"the skill a profile names", ".pi/skills/lint", "[unknown-skill]"},
		{"the last profile", ".pi/facets/profiles/good", "[no-profiles]"},
	} {
		git(repo, "rm", "-q", "-r", tc.path)
		if code, out := commit("delete " + tc.name); code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("deleting %s: git commit exit %d, want a refusal naming %s:\n%s", tc.name, code, tc.want, out)
		}
		git(repo, "reset", "-q", "--hard")
	}
	writeFiles(t, repo, map[string]string{"README.md": "A repository.\n"})
	git(repo, "add", "-A")
	if code, out := commit("a readme"); code != 0 {
		t.Errorf("a commit to a sound repository: exit %d\n%s", code, out)
	}
}

// preCommitEnv is the environment of the pre-commit test: a HOME and a
// pre-commit cache of its own, a git identity, and this machine's Go
// settings (module cache, build cache, proxy, toolchain), which the Go
// settings file under the real HOME would otherwise supply, so the hook
// builds from the module cache instead of downloading everything again.
func preCommitEnv(t *testing.T, home, cache string) []string {
	t.Helper()
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"PRE_COMMIT_HOME=" + cache,
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
		"GIT_AUTHOR_NAME=facets test", "GIT_AUTHOR_EMAIL=test@example.invalid",
		"GIT_COMMITTER_NAME=facets test", "GIT_COMMITTER_EMAIL=test@example.invalid",
		"GIT_CONFIG_NOSYSTEM=1",
		// Stamp the build with the commit, as a user's checkout would be.
		"GOFLAGS=-buildvcs=true",
	}
	out, err := exec.Command("go", "env", "-json", "GOMODCACHE", "GOCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOTOOLCHAIN").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var goEnv map[string]string
	if err := json.Unmarshal(out, &goEnv); err != nil {
		t.Fatalf("go env -json: %v", err)
	}
	for k, v := range goEnv {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// runTool runs name in dir and returns its output, failing the test when
// it fails.
func runTool(t *testing.T, env []string, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// copyModule copies this module's source (what a clone holds: go.mod,
// go.sum and every package with its embedded files) into dst: the files
// git tracks or would track when run in a checkout, else every file
// outside .git.
func copyModule(t *testing.T, dst string) {
	t.Helper()
	root, err := filepath.Abs(recipeRoot)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				rel, _ := filepath.Rel(root, p)
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // tracked but deleted in the working tree
		}
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "go.mod")); err != nil {
		t.Fatalf("copy of the module has no go.mod: %v", err)
	}
}

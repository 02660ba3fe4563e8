package profiles

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAncestors(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{"/", []string{"/"}},
		{"/a", []string{"/", "/a"}},
		{"/a/b/c/", []string{"/", "/a", "/a/b", "/a/b/c"}},
		{"/a/./b/../c", []string{"/", "/a", "/a/c"}},
	} {
		if diff := cmp.Diff(tc.want, Ancestors(tc.dir)); diff != "" {
			t.Errorf("Ancestors(%q) (-want +got):\n%s", tc.dir, diff)
		}
	}
}

func TestNewEnv(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		home    string
		cwd     string
		wantErr string
		wantDir string
		wantCwd string
	}{
		{name: "default agent dir", home: "/home/u", cwd: "/w", wantDir: "/home/u/.pi/agent", wantCwd: "/w"},
		{name: "env agent dir", env: map[string]string{"PI_CODING_AGENT_DIR": "/x/agent/"}, home: "/home/u", cwd: "/w", wantDir: "/x/agent", wantCwd: "/w"},
		{name: "relative agent dir is relative to the process, not --cwd", env: map[string]string{"PI_CODING_AGENT_DIR": "rel"}, home: "/h", cwd: "/w", wantDir: filepath.Join(wd, "rel"), wantCwd: "/w"},
		{name: "relative cwd", home: "/h", cwd: "sub", wantDir: "/h/.pi/agent", wantCwd: filepath.Join(wd, "sub")},
		{name: "no home, no env", cwd: "/w", wantErr: "cannot locate Pi's agent dir"},
		{name: "env agent dir without home", env: map[string]string{"PI_CODING_AGENT_DIR": "/x/agent"}, cwd: "/w", wantDir: "/x/agent", wantCwd: "/w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := NewEnv(func(k string) string { return tc.env[k] }, tc.home, tc.cwd)
			if expectErr(t, err, tc.wantErr) {
				return
			}
			if env.AgentDir != tc.wantDir || env.Cwd != tc.wantCwd {
				t.Errorf("got agent %q cwd %q, want %q %q", env.AgentDir, env.Cwd, tc.wantDir, tc.wantCwd)
			}
			if want := filepath.Clean(tc.home); tc.home != "" && env.Home != want || tc.home == "" && env.Home != "" {
				t.Errorf("got home %q for %q", env.Home, tc.home)
			}
		})
	}
}

func TestDecideTrust(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name     string
		flag     *bool
		pi       *bool    // Pi's answer, ctx.isProjectTrusted()
		files    []string // made under ROOT (a trailing / makes a folder)
		cwd      string   // under ROOT; default p/q
		relHome  bool     // HOME (ROOT/home) given relative to the process's directory
		trust    string   // trust.json; ROOT is replaced by the temp dir
		settings string
		want     Trust
		wantErr  string
	}{
		{name: "nothing decided", want: Trust{Reason: "default"}},
		{name: "flag yes beats trust.json no", flag: &yes, trust: `{"ROOT/p": false}`, want: Trust{Trusted: true, Reason: "flag"}},
		{name: "flag no beats settings always", flag: &no, settings: `{"defaultProjectTrust":"always"}`, want: Trust{Reason: "flag"}},
		{name: "exact entry", trust: `{"ROOT/p/q": true}`, want: Trust{Trusted: true, Reason: "trust.json", Path: "ROOT/p/q"}},
		{name: "nearest ancestor wins", trust: `{"ROOT/p": true, "ROOT/p/q": false}`, want: Trust{Reason: "trust.json", Path: "ROOT/p/q"}},
		{name: "null entry is no decision", trust: `{"ROOT/p": true, "ROOT/p/q": null}`, want: Trust{Trusted: true, Reason: "trust.json", Path: "ROOT/p"}},
		{name: "unrelated entry ignored", trust: `{"ROOT/other": true}`, want: Trust{Reason: "default"}},
		{name: "settings always", settings: `{"defaultProjectTrust":"always"}`, want: Trust{Trusted: true, Reason: "settings", Path: "ROOT/agent/settings.json"}},
		{name: "settings never", settings: `{"defaultProjectTrust":"never"}`, want: Trust{Reason: "settings", Path: "ROOT/agent/settings.json"}},
		{name: "settings ask is untrusted", settings: `{"defaultProjectTrust":"ask"}`, want: Trust{Reason: "default"}},
		{name: "trust.json beats settings", trust: `{"ROOT/p": false}`, settings: `{"defaultProjectTrust":"always"}`, want: Trust{Reason: "trust.json", Path: "ROOT/p"}},
		// Pi answers "yes" for a project it has nothing to ask about: that
		// is no decision, so facets' own rules apply.
		{name: "pi default yes without pi resources", pi: &yes, files: []string{"p/q/.pi/facets/MAIN.md"}, want: Trust{Reason: "default"}},
		{name: "pi yes for .pi/agents only is no decision", pi: &yes, files: []string{"p/q/.pi/agents/x.md"}, want: Trust{Reason: "default"}},
		{name: "pi default yes, trust.json yes", pi: &yes, trust: `{"ROOT/p": true}`, want: Trust{Trusted: true, Reason: "trust.json", Path: "ROOT/p"}},
		{name: "pi default yes, settings always", pi: &yes, settings: `{"defaultProjectTrust":"always"}`, want: Trust{Trusted: true, Reason: "settings", Path: "ROOT/agent/settings.json"}},
		{name: "pi no is always honoured", pi: &no, trust: `{"ROOT/p": true}`, want: Trust{Reason: "pi"}},
		{name: "pi yes with .pi/settings.json is pi's decision", pi: &yes, files: []string{"p/q/.pi/settings.json"}, want: Trust{Trusted: true, Reason: "pi"}},
		{name: "pi yes with .pi/skills/", pi: &yes, files: []string{"p/q/.pi/skills/"}, want: Trust{Trusted: true, Reason: "pi"}},
		{name: "pi yes with ancestor .agents/skills", pi: &yes, files: []string{"p/.agents/skills/"}, want: Trust{Trusted: true, Reason: "pi"}},
		{name: "ancestor .pi/settings.json is not pi's", pi: &yes, files: []string{"p/.pi/settings.json"}, want: Trust{Reason: "default"}},
		{name: "home .agents/skills is not pi's", pi: &yes, files: []string{"home/.agents/skills/"}, cwd: "home/p", want: Trust{Reason: "default"}},
		{name: "home .agents/skills with a relative HOME", pi: &yes, files: []string{"home/.agents/skills/"}, cwd: "home/p", relHome: true, want: Trust{Reason: "default"}},
		{name: "a project's .agents/skills under home is pi's", pi: &yes, files: []string{"home/p/.agents/skills/"}, cwd: "home/p", want: Trust{Trusted: true, Reason: "pi"}},
		{name: "flag beats pi", flag: &no, pi: &yes, files: []string{"p/q/.pi/settings.json"}, want: Trust{Reason: "flag"}},
		{name: "malformed trust.json", trust: `{"ROOT/p": tru`, wantErr: "trust.json"},
		{name: "malformed settings", settings: `[`, wantErr: "settings.json"},
		// Empty once the byte order mark is skipped: refused, not a panic.
		{name: "trust.json holding only a BOM", trust: "\xEF\xBB\xBF", wantErr: "trust.json: unexpected end of JSON input"},
		{name: "settings.json holding only a BOM", settings: "\xEF\xBB\xBF", wantErr: "settings.json: unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			agent := filepath.Join(root, "agent")
			cwd := filepath.Join(root, "p", "q")
			for _, d := range []string{agent, cwd} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.trust != "" {
				os.WriteFile(filepath.Join(agent, "trust.json"), []byte(strings.ReplaceAll(tc.trust, "ROOT", root)), 0o644)
			}
			if tc.settings != "" {
				os.WriteFile(filepath.Join(agent, "settings.json"), []byte(tc.settings), 0o644)
			}
			for _, f := range tc.files {
				path := filepath.Join(root, f)
				dir := path
				if !strings.HasSuffix(f, "/") {
					dir = filepath.Dir(path)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if dir != path {
					os.WriteFile(path, []byte("{}"), 0o644)
				}
			}
			home := filepath.Join(root, "home")
			if tc.relHome {
				wd, _ := os.Getwd()
				if home, err = filepath.Rel(wd, home); err != nil {
					t.Fatal(err)
				}
			}
			if tc.cwd != "" {
				cwd = filepath.Join(root, tc.cwd)
				if err := os.MkdirAll(cwd, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, err := DecideTrust(Env{AgentDir: agent, Cwd: cwd, Home: home}, tc.flag, tc.pi)
			if expectErr(t, err, tc.wantErr) {
				return
			}
			want := tc.want
			want.Path = strings.ReplaceAll(want.Path, "ROOT", root)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("trust (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrustFollowsSymlinkedCwd(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	real := filepath.Join(root, "real")
	os.MkdirAll(real, 0o755)
	os.MkdirAll(filepath.Join(root, "agent"), 0o755)
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "agent", "trust.json"), []byte(`{"`+real+`": true}`), 0o644)
	got, err := DecideTrust(Env{AgentDir: filepath.Join(root, "agent"), Cwd: link}, nil, nil)
	if err != nil || !got.Trusted {
		t.Fatalf("trust through symlinked cwd = %+v, %v; want trusted (Pi keys trust.json by canonical path)", got, err)
	}
}

func TestUTF16Len(t *testing.T) {
	for s, want := range map[string]int{"": 0, "abc": 3, "读": 1, "😀": 2, "a😀b": 4} {
		if got := UTF16Len(s); got != want {
			t.Errorf("UTF16Len(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestIsNamedSkill(t *testing.T) {
	for ref, want := range map[string]bool{
		"code-review": true, "./x": false, "../x": false, "a/b": false, `a\b`: false,
		"/abs": false, ".hidden": false, "~/skills/x": false, "~": false,
	} {
		if got := IsNamedSkill(ref); got != want {
			t.Errorf("IsNamedSkill(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"reviewer": true, "a": true, "A.b_c-1": true, "9lives": true,
		strings.Repeat("a", 64): true, strings.Repeat("a", 65): false,
		"": false, ".hidden": false, "-x": false, "_x": false, "has space": false,
		"a/b": false, "ü": false, "a\n": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestAgentDir(t *testing.T) {
	wd, _ := os.Getwd()
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, tc := range []struct {
		name, explicit, env, home, want, wantErr string
	}{
		{name: "explicit wins over env", explicit: "/flag/agent", env: "/env/agent", home: "/h", want: "/flag/agent"},
		{name: "env wins over home", env: "/env/agent/", home: "/h", want: "/env/agent"},
		{name: "home default", home: "/h", want: "/h/.pi/agent"},
		{name: "relative explicit is relative to the process", explicit: "rel", want: filepath.Join(wd, "rel")},
		{name: "nothing to go on", wantErr: "cannot locate"},
	} {
		got, err := AgentDir(tc.explicit, env(tc.env), tc.home)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: AgentDir = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// expectErr checks err against a case's wantErr: when wantErr is set, err
// must mention it and the case is over (true); otherwise err must be nil.
func expectErr(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want it to mention %q", err, wantErr)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// TestProjectOnlyEnv pins the repository root a project-only check starts
// from: the nearest .git (a directory, or a worktree's file), else the
// working directory itself; ProjectDirs runs from there down.
func TestProjectOnlyEnv(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"repo/.git", "repo/svc/api", "wt/sub", "plain/x"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "wt", ".git"), []byte("gitdir: /elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cwd, root string }{
		{"repo", "repo"},
		{"repo/svc/api", "repo"},
		{"wt/sub", "wt"},
		{"plain/x", "plain/x"},
	} {
		env := Env{Cwd: filepath.Join(root, tc.cwd), AgentDir: filepath.Join(root, "agent")}.ProjectOnlyEnv()
		if want := filepath.Join(root, tc.root); env.Root != want {
			t.Errorf("%s: Root = %s, want %s", tc.cwd, env.Root, want)
		}
		dirs := env.ProjectDirs()
		if dirs[0] != env.Root || dirs[len(dirs)-1] != env.Cwd {
			t.Errorf("%s: ProjectDirs = %v, want %s down to %s", tc.cwd, dirs, env.Root, env.Cwd)
		}
	}
}

// TestProjectsBelow pins which directories a repository check judges:
// the start and every directory below it with a .pi, but nothing inside
// hidden directories, node_modules or a symbolic link.
func TestProjectsBelow(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".pi/facets", "svc/.pi/agents", "svc/api/.pi", "node_modules/x/.pi", "vendor/v/.pi", "cmd/testdata/fixture/.pi", ".hidden/y/.pi", "docs", "real/z/.pi"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	got, err := ProjectsBelow(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{root, filepath.Join(root, "real", "z"), filepath.Join(root, "svc"), filepath.Join(root, "svc", "api")}
	if !slices.Equal(got, want) {
		t.Errorf("ProjectsBelow = %v, want %v", got, want)
	}
}

func TestDefaultThinkingLevel(t *testing.T) {
	for _, tc := range []struct {
		name            string
		global, project string
		projectLoaded   bool
		want            string
	}{
		{name: "nothing set", want: "medium"},
		{name: "global default", global: `{"defaultThinkingLevel":"high"}`, want: "high"},
		{name: "global per-model beats default", global: `{"defaultThinkingLevel":"high","modelThinkingLevels":{"p/m":"low"}}`, want: "low"},
		{name: "another model's entry", global: `{"modelThinkingLevels":{"p/other":"low"}}`, want: "medium"},
		{name: "project default beats global", global: `{"defaultThinkingLevel":"high"}`, project: `{"defaultThinkingLevel":"minimal"}`, projectLoaded: true, want: "minimal"},
		{name: "global per-model beats project default", global: `{"modelThinkingLevels":{"p/m":"low"}}`, project: `{"defaultThinkingLevel":"minimal"}`, projectLoaded: true, want: "low"},
		{name: "project not loaded by Pi", global: `{"defaultThinkingLevel":"high"}`, project: `{"defaultThinkingLevel":"minimal"}`, want: "high"},
		{name: "unreadable global adds nothing", global: `{`, project: `{"defaultThinkingLevel":"minimal"}`, projectLoaded: true, want: "minimal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			env := Env{AgentDir: filepath.Join(root, "agent"), Cwd: filepath.Join(root, "p")}
			for path, content := range map[string]string{filepath.Join(env.AgentDir, "settings.json"): tc.global, filepath.Join(env.Cwd, ".pi", "settings.json"): tc.project} {
				if content == "" {
					continue
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := DefaultThinkingLevel(env, "p/m", tc.projectLoaded); got != tc.want {
				t.Errorf("DefaultThinkingLevel = %q, want %q", got, tc.want)
			}
		})
	}
}

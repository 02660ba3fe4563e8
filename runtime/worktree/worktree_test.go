package worktree_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/facets-dev/facets/runtime/worktree"
)

// git runs real git in dir with a fixed identity and no user config, and
// fails the test on error.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func isolateGit(t testing.TB) {
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

// newRepo makes a repository with one commit on main holding a.txt.
func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required (install it; CI does)")
	}
	isolateGit(t)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "--quiet", "-b", "main")
	write(t, filepath.Join(dir, "a.txt"), "one\n")
	write(t, filepath.Join(dir, "sub", "b.txt"), "two\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "--quiet", "-m", "first")
	return dir
}

// fresh is a repository from newRepo and a worktree of it on branch.
func fresh(t *testing.T, branch string) (worktree.Git, string, worktree.Repo, worktree.Worktree) {
	t.Helper()
	var g worktree.Git
	repo := newRepo(t)
	r, err := g.Find(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	w, err := g.Create(context.Background(), r, filepath.Join(t.TempDir(), "w"), branch)
	if err != nil {
		t.Fatal(err)
	}
	return g, repo, r, w
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)

	r, err := g.Find(ctx, filepath.Join(repo, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Top != repo || r.Branch != "main" || r.Prefix != "sub" || len(r.Head) != 40 || r.CommonDir != filepath.Join(repo, ".git") {
		t.Errorf("Find = %+v", r)
	}

	git(t, repo, "checkout", "--quiet", "--detach")
	if r, err = g.Find(ctx, repo); err != nil || r.Branch != "" || len(r.Head) != 40 {
		t.Errorf("detached HEAD: Find = %+v, %v; want no branch and the commit", r, err)
	}

	cases := []struct {
		name  string
		setup func(t *testing.T) string
		want  string
	}{
		{"not a repository", func(t *testing.T) string { return t.TempDir() }, "not in a git work tree"},
		{"bare repository", func(t *testing.T) string {
			d := filepath.Join(t.TempDir(), "bare.git")
			git(t, filepath.Dir(d), "init", "--quiet", "--bare", d)
			return d
		}, "bare git repository"},
		{"no commits", func(t *testing.T) string {
			d := t.TempDir()
			git(t, d, "init", "--quiet")
			return d
		}, "has no commits yet"},
		{"inside .git", func(t *testing.T) string { return filepath.Join(repo, ".git") }, "not a work tree"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := g.Find(ctx, c.setup(t))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Find: %v; want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := g.Find(ctx, t.TempDir()); !errors.Is(err, worktree.ErrNotRepository) {
		t.Errorf("outside a repository: %v; want ErrNotRepository", err)
	}
}

func TestBranchName(t *testing.T) {
	for _, c := range []struct{ profile, run, want string }{
		{"writer", "01234567", "facets/writer/01234567"},
		{"a..b", "r1", "facets/a-b/r1"},
		{"x.lock", "r1", "facets/x.lock-/r1"},
		{"x.", "r1", "facets/x.-/r1"},
	} {
		got := worktree.BranchName(c.profile, c.run)
		if got != c.want {
			t.Errorf("BranchName(%q, %q) = %q, want %q", c.profile, c.run, got, c.want)
		}
		if _, err := gitErr(".", "check-ref-format", "--branch", got); err != nil {
			t.Errorf("%q is not a valid branch name: %v", got, err)
		}
	}
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	r, err := g.Find(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wt", "one")
	w, err := g.Create(ctx, r, path, "facets/writer/one")
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, path, "rev-parse", "--abbrev-ref", "HEAD"); got != "facets/writer/one" {
		t.Errorf("worktree branch %q", got)
	}
	s, err := g.Inspect(ctx, w)
	if err != nil || !s.Empty() {
		t.Fatalf("fresh worktree: %+v, %v; want empty", s, err)
	}

	write(t, filepath.Join(path, "new.txt"), "x\n")
	if s, _ = g.Inspect(ctx, w); s.Empty() || len(s.Uncommitted) != 1 || s.Uncommitted[0] != "?? new.txt" {
		t.Fatalf("untracked file: %+v", s)
	}
	if err := g.Remove(ctx, w, false); err == nil || !strings.Contains(err.Error(), "new.txt") {
		t.Errorf("Remove of a dirty worktree: %v; want git's refusal naming new.txt", err)
	}

	git(t, path, "add", "new.txt")
	git(t, path, "commit", "--quiet", "-m", "add new")
	s, err = g.Inspect(ctx, w)
	if err != nil || s.Ahead != 1 || len(s.Uncommitted) != 0 || len(s.Changed) != 2 || !strings.Contains(s.Changed[0], "new.txt") {
		t.Fatalf("one commit: %+v, %v", s, err)
	}
	if got := s.Summary(w); !strings.Contains(got, "branch facets/writer/one: 1 commit(s) ahead of "+r.Head[:12]+", 1 file(s) changed, worktree "+path) {
		t.Errorf("Summary = %q", got)
	}

	err = g.Remove(ctx, w, false)
	var unmerged *worktree.UnmergedError
	if !errors.As(err, &unmerged) || len(unmerged.Commits) != 1 || !strings.HasSuffix(unmerged.Commits[0], " add new") {
		t.Fatalf("Remove of unmerged work: %v; want an UnmergedError naming the commit", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal("the refused removal touched the worktree")
	}

	git(t, repo, "merge", "--quiet", "--ff-only", "facets/writer/one")
	if err := g.Remove(ctx, w, false); err != nil {
		t.Fatalf("Remove of merged work: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if g.BranchExists(ctx, r, w.Branch) {
		t.Error("branch still there")
	}
}

func TestForcedRemoveDeletesWork(t *testing.T) {
	ctx := context.Background()
	g, _, r, w := fresh(t, "facets/p/x")
	path := w.Path
	write(t, filepath.Join(path, "a.txt"), "changed\n")
	git(t, path, "commit", "--quiet", "-am", "change")
	write(t, filepath.Join(path, "a.txt"), "changed again\n")
	if err := g.Remove(ctx, w, true); err != nil {
		t.Fatalf("forced Remove: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) || g.BranchExists(ctx, r, w.Branch) {
		t.Errorf("forced Remove left the worktree or branch")
	}
}

func TestCreateRefusals(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	r, _ := g.Find(ctx, repo)

	git(t, repo, "branch", "facets/p/taken")
	_, err := g.Create(ctx, r, filepath.Join(t.TempDir(), "w"), "facets/p/taken")
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing branch: %v; want git's refusal", err)
	}

	exists := t.TempDir()
	_, err = g.Create(ctx, r, exists, "facets/p/new")
	if err == nil || !strings.Contains(err.Error(), exists+" already exists") {
		t.Errorf("existing path: %v", err)
	}
	if g.BranchExists(ctx, r, "facets/p/new") {
		t.Error("a refused Create left a branch")
	}
}

func TestRemovedByHandAndReopen(t *testing.T) {
	ctx := context.Background()
	g, repo, _, w := fresh(t, "facets/p/hand")
	path := w.Path
	write(t, filepath.Join(path, "c.txt"), "c\n")
	git(t, path, "add", "c.txt")
	git(t, path, "commit", "--quiet", "-m", "c")
	git(t, repo, "worktree", "remove", path)

	s, err := g.Inspect(ctx, w)
	if err != nil || !s.Missing || s.Ahead != 1 || s.Empty() {
		t.Fatalf("removed by hand: %+v, %v; want missing with its commit", s, err)
	}
	if got := s.Summary(w); !strings.Contains(got, "removed by hand") {
		t.Errorf("Summary = %q", got)
	}
	if err := g.Reopen(ctx, w); err != nil {
		t.Fatal(err)
	}
	if got := git(t, path, "log", "-1", "--format=%s"); got != "c" {
		t.Errorf("reopened worktree at %q, want the branch's commit", got)
	}
	if err := g.Reopen(ctx, w); err != nil {
		t.Errorf("Reopen of an open worktree: %v", err)
	}

	// Reopen after the branch was removed too: a new branch at the base.
	if err := g.Remove(ctx, w, true); err != nil {
		t.Fatal(err)
	}
	if err := g.Reopen(ctx, w); err != nil {
		t.Fatal(err)
	}
	if got := git(t, path, "rev-parse", "HEAD"); got != w.Base {
		t.Errorf("reopened at %s, want the base %s", got, w.Base)
	}
}

func TestRepositoryMoved(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	r, _ := g.Find(ctx, repo)
	w, err := g.Create(ctx, r, filepath.Join(t.TempDir(), "w"), "facets/p/moved")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repo, repo+"-moved"); err != nil {
		t.Fatal(err)
	}
	s, err := g.Inspect(ctx, w)
	if err != nil || !s.RepoMissing || s.Empty() {
		t.Fatalf("moved repository: %+v, %v; want RepoMissing", s, err)
	}
	if got := s.Summary(w); !strings.Contains(got, "is gone") || !strings.Contains(got, w.Path) {
		t.Errorf("Summary = %q", got)
	}
}

func TestFourAtOnce(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	r, _ := g.Find(ctx, repo)
	root := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := string(rune('a' + i))
			_, errs[i] = g.Create(ctx, r, filepath.Join(root, name), "facets/p/"+name)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("create %d: %v", i, err)
		}
	}
	if n := len(strings.Split(git(t, repo, "worktree", "list"), "\n")); n != 5 {
		t.Errorf("%d worktrees listed, want 5", n)
	}
}

func TestDirty(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	r, _ := g.Find(ctx, repo)
	if n, err := g.Dirty(ctx, r); err != nil || n != 0 {
		t.Fatalf("clean tree: %d, %v", n, err)
	}
	write(t, filepath.Join(repo, "a.txt"), "edited\n")
	write(t, filepath.Join(repo, "untracked.txt"), "u\n")
	git(t, repo, "mv", "sub/b.txt", "sub/c.txt")
	write(t, filepath.Join(repo, ".gitignore"), "*.log\n")
	write(t, filepath.Join(repo, "x.log"), "ignored\n")
	if n, err := g.Dirty(ctx, r); err != nil || n != 4 {
		t.Errorf("dirty tree: %d, %v; want 4 (edit, untracked, rename, .gitignore)", n, err)
	}
}

func TestCopyIncluded(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	write(t, filepath.Join(repo, ".gitignore"), ".env\nlocal/\nlink.env\n*.log\n")
	git(t, repo, "add", ".gitignore")
	git(t, repo, "commit", "--quiet", "-m", "ignore")
	write(t, filepath.Join(repo, ".env"), "KEY=1\n")
	write(t, filepath.Join(repo, "local", "conf.toml"), "x = 1\n")
	write(t, filepath.Join(repo, "debug.log"), "not listed\n")
	write(t, filepath.Join(repo, "notes.txt"), "untracked, not ignored\n")
	outside := filepath.Join(t.TempDir(), "secret")
	write(t, outside, "outside\n")
	if err := os.Symlink(outside, filepath.Join(repo, "link.env")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, worktree.IncludeFile), "# copied into each Sub's worktree\n.env\nlocal/\nlink.env\nnotes.txt\n")

	r, _ := g.Find(ctx, repo)
	dst := filepath.Join(t.TempDir(), "w")
	if _, err := g.Create(ctx, r, dst, "facets/p/inc"); err != nil {
		t.Fatal(err)
	}
	c, err := g.CopyIncluded(ctx, r, dst)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Files, ",") != ".env,local/conf.toml" {
		t.Errorf("copied %q, want .env and local/conf.toml", c.Files)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, ".env")); string(got) != "KEY=1\n" {
		t.Errorf(".env in worktree = %q", got)
	}
	skipped := strings.Join(c.Skipped, "\n")
	for _, want := range []string{"link.env: ", "notes.txt: not ignored"} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped:\n%s\nwant a line with %q", skipped, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "link.env")); !os.IsNotExist(err) {
		t.Errorf("the symbolic link was copied: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "debug.log")); !os.IsNotExist(err) {
		t.Errorf("an ignored file not listed was copied")
	}

	// A second copy never overwrites what the worktree has.
	write(t, filepath.Join(dst, ".env"), "KEY=sub\n")
	c, _ = g.CopyIncluded(ctx, r, dst)
	if got, _ := os.ReadFile(filepath.Join(dst, ".env")); string(got) != "KEY=sub\n" || len(c.Files) != 0 {
		t.Errorf("second copy replaced .env (%q) or copied %q", got, c.Files)
	}
}

func TestCopyIncludedRefusesLinkedIncludeFile(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	list := filepath.Join(t.TempDir(), "list")
	write(t, list, ".env\n")
	if err := os.MkdirAll(filepath.Join(repo, ".pi", "facets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(list, filepath.Join(repo, worktree.IncludeFile)); err != nil {
		t.Fatal(err)
	}
	r, _ := g.Find(ctx, repo)
	if _, err := g.CopyIncluded(ctx, r, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("linked include file: %v; want a refusal", err)
	}
}

func TestSubmodules(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	lib := newRepo(t)
	repo := newRepo(t)
	// Local submodule URLs need the file protocol, which git allows only
	// when the user's configuration says so; this is that configuration.
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
	t.Setenv("GIT_CONFIG_VALUE_0", "always")
	git(t, repo, "submodule", "--quiet", "add", lib, "lib")
	git(t, repo, "commit", "--quiet", "-m", "lib")
	r, _ := g.Find(ctx, repo)
	path := filepath.Join(t.TempDir(), "w")
	if _, err := g.Create(ctx, r, path, "facets/p/sub"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, "lib", "a.txt")); err == nil {
		t.Fatal("git worktree add checked the submodule out by itself; InitSubmodules is not needed")
	}
	if err := g.InitSubmodules(ctx, path); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(path, "lib", "a.txt")); err != nil || string(got) != "one\n" {
		t.Errorf("submodule file: %q, %v", got, err)
	}

	// Without the permission, the failure says what to run.
	t.Setenv("GIT_CONFIG_COUNT", "0")
	path2 := filepath.Join(t.TempDir(), "w2")
	if _, err := g.Create(ctx, r, path2, "facets/p/sub2"); err != nil {
		t.Fatal(err)
	}
	if err := g.InitSubmodules(ctx, path2); err == nil || !strings.Contains(err.Error(), "git submodule update --init") {
		t.Errorf("refused submodule: %v", err)
	}
}

// A Sub that commits on a detached HEAD, or on a branch of its own, has
// work the facets branch does not show: the worktree is not empty, and
// Remove refuses commits that are on no branch.
func TestWorkOffTheBranch(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	r, _ := g.Find(ctx, repo)

	path := filepath.Join(t.TempDir(), "w")
	w, err := g.Create(ctx, r, path, "facets/p/detached")
	if err != nil {
		t.Fatal(err)
	}
	git(t, path, "checkout", "--quiet", "--detach")
	write(t, filepath.Join(path, "d.txt"), "d\n")
	git(t, path, "add", ".")
	git(t, path, "commit", "--quiet", "-m", "detached work")
	s, err := g.Inspect(ctx, w)
	if err != nil || s.Empty() || len(s.Stray) != 1 || !strings.HasPrefix(s.Head, "a detached HEAD at ") {
		t.Fatalf("detached commit: %+v, %v; want not empty, one stray commit", s, err)
	}
	if got := s.Summary(w); !strings.Contains(got, "1 commit(s) at its HEAD are on no branch") || !strings.Contains(got, "detached work") {
		t.Errorf("Summary = %q", got)
	}
	err = g.Remove(ctx, w, false)
	var unmerged *worktree.UnmergedError
	if !errors.As(err, &unmerged) || !strings.Contains(err.Error(), "detached work") || !strings.Contains(err.Error(), "is on a detached HEAD at ") {
		t.Fatalf("Remove of a detached commit: %v", err)
	}

	path2 := filepath.Join(t.TempDir(), "w2")
	w2, err := g.Create(ctx, r, path2, "facets/p/own")
	if err != nil {
		t.Fatal(err)
	}
	git(t, path2, "checkout", "--quiet", "-b", "fix/x")
	write(t, filepath.Join(path2, "x.txt"), "x\n")
	git(t, path2, "add", ".")
	git(t, path2, "commit", "--quiet", "-m", "own branch work")
	s, _ = g.Inspect(ctx, w2)
	if s.Empty() || s.Head != "branch fix/x" || len(s.Stray) != 0 || !strings.Contains(s.Summary(w2), "its HEAD is now on branch fix/x") {
		t.Fatalf("own branch: %+v %q", s, s.Summary(w2))
	}
}

// git refuses to remove a worktree with submodules without --force; once
// facets' own checks pass, an empty one goes, and one whose submodule has
// a change is refused.
func TestRemoveWithSubmodules(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	lib := newRepo(t)
	repo := newRepo(t)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
	t.Setenv("GIT_CONFIG_VALUE_0", "always")
	git(t, repo, "submodule", "--quiet", "add", lib, "lib")
	git(t, repo, "commit", "--quiet", "-m", "lib")
	r, _ := g.Find(ctx, repo)
	for _, dirty := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "w")
		w, err := g.Create(ctx, r, path, fmt.Sprintf("facets/p/sub-%v", dirty))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.InitSubmodules(ctx, path); err != nil {
			t.Fatal(err)
		}
		if dirty {
			write(t, filepath.Join(path, "lib", "a.txt"), "changed in the submodule\n")
			s, _ := g.Inspect(ctx, w)
			if s.Empty() {
				t.Fatalf("a change inside the submodule: %+v; want not empty", s)
			}
			if err := g.Remove(ctx, w, false); err == nil || !strings.Contains(err.Error(), "lib") {
				t.Fatalf("Remove with a changed submodule: %v", err)
			}
			continue
		}
		if s, _ := g.Inspect(ctx, w); !s.Empty() {
			t.Fatalf("fresh worktree with a submodule: %+v; want empty", s)
		}
		if err := g.Remove(ctx, w, false); err != nil {
			t.Fatalf("Remove of an empty worktree with a submodule: %v", err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("worktree left: %v", err)
		}
	}
}

// The Main on a detached HEAD with a commit no branch has: a Sub's empty
// worktree at that commit is still removed, since the Main's HEAD holds it.
func TestMainOnDetachedCommit(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	git(t, repo, "checkout", "--quiet", "--detach")
	write(t, filepath.Join(repo, "m.txt"), "m\n")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "--quiet", "-m", "main's unbranched commit")
	r, _ := g.Find(ctx, repo)
	w, err := g.Create(ctx, r, filepath.Join(t.TempDir(), "w"), "facets/p/dm")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(ctx, w, false); err != nil {
		t.Fatalf("Remove of an empty worktree at the Main's detached commit: %v", err)
	}
}

// A Sub that edits a copied ignored file (.env) or adds one the include
// list names has work git status does not show: the worktree is not empty
// and Remove refuses; other ignored files (build output) are not work.
func TestIncludedFilesAreWork(t *testing.T) {
	ctx := context.Background()
	var g worktree.Git
	repo := newRepo(t)
	write(t, filepath.Join(repo, ".gitignore"), ".env\n*.local\nbuild/\n")
	write(t, filepath.Join(repo, worktree.IncludeFile), ".env\n*.local\n")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "--quiet", "-m", "ignore")
	write(t, filepath.Join(repo, ".env"), "KEY=1\n")
	r, _ := g.Find(ctx, repo)
	for _, tc := range []struct {
		name, file, content string
		want                string
	}{
		{"copied, unchanged", ".env", "KEY=1\n", ""},
		{"build output", "build/out.bin", "x", ""},
		{"copied, edited", ".env", "KEY=2\n", "!M .env"},
		{"new, listed", "db.local", "x", "!A db.local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w")
			w, err := g.Create(ctx, r, path, "facets/p/"+strings.ReplaceAll(tc.name, " ", "-")[:4]+fmt.Sprint(len(tc.name)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.CopyIncluded(ctx, r, path); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(path, tc.file), tc.content)
			s, err := g.Inspect(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if !s.Empty() {
					t.Fatalf("state %+v; want empty", s)
				}
				return
			}
			if s.Empty() || !slices.Contains(s.Uncommitted, tc.want) {
				t.Fatalf("state %+v; want %q among the uncommitted", s, tc.want)
			}
			var unc *worktree.UncommittedError
			if err := g.Remove(ctx, w, false); !errors.As(err, &unc) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Remove: %v", err)
			}
		})
	}
}

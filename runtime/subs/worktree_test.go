package subs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/runtime/worktree"
)

// gitIn runs real git in dir with a fixed identity and no user config.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commitIn writes name (its own name as content) in dir and commits it.
func commitIn(t *testing.T, dir, name, msg string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "--quiet", "-m", msg)
}

// worktreeFixture is a fake Herdr and a Main working in a git repository
// whose profile "writer" has "workspace": "worktree".
type worktreeFixture struct {
	*fixture
	repo string
}

func newWorktreeFixture(t *testing.T) *worktreeFixture {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	f := newFixture(t)
	repo := filepath.Join(f.dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "pkg", "b.txt"), []byte("two\n"), 0o644)
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "--quiet", "-m", "first")
	m := *f.manifest
	m.Cwd = repo
	m.Profiles = slices.Clone(m.Profiles)
	for i := range m.Profiles {
		if m.Profiles[i].Name == "writer" || m.Profiles[i].Name == "reviewer" {
			m.Profiles[i].Launch.Workspace = manifest.WorkspaceWorktree
		}
	}
	f.manifest = &m
	return &worktreeFixture{fixture: f, repo: repo}
}

func (f *worktreeFixture) runtime() *Runtime {
	rt := f.fixture.runtime()
	rt.WorktreeDir = filepath.Join(f.dir, "worktrees")
	return rt
}

// saveSession has the Sub of runID report session id with a session file,
// as a persistent Sub's Pi does.
func (f *worktreeFixture) saveSession(t *testing.T, runID, id string) {
	t.Helper()
	file := filepath.Join(f.dir, "sessions", id+".jsonl")
	os.MkdirAll(filepath.Dir(file), 0o700)
	os.WriteFile(file, []byte("{}\n"), 0o600)
	if err := f.sub(runID).WriteSession(id, file); err != nil {
		t.Fatal(err)
	}
}

func (f *worktreeFixture) delegate(t *testing.T, profile, title string) Delegation {
	t.Helper()
	d, err := f.runtime().Delegate(context.Background(), DelegateRequest{
		Manifest: f.manifest, MainSessionID: mainID, Profile: profile, Title: title, Task: "task: " + title,
	})
	if err != nil {
		t.Fatalf("delegate %s: %v", title, err)
	}
	return d
}

func TestWorktreeSubBranchesAndComesBack(t *testing.T) {
	f := newWorktreeFixture(t)
	ctx := context.Background()
	head := gitIn(t, f.repo, "rev-parse", "HEAD")

	a := f.delegate(t, "writer", "edit a")
	b := f.delegate(t, "writer", "edit a too")
	for _, d := range []Delegation{a, b} {
		w := d.Worktree
		if w == nil || w.Branch != "facets/writer/"+short(d.RunID) || w.Base != head || !strings.HasPrefix(w.Path, filepath.Join(f.dir, "worktrees")) {
			t.Fatalf("delegation worktree = %+v", w)
		}
		if got := f.pane(d.RunID).Cwd; got != w.Path {
			t.Errorf("Sub pane cwd %q, want the worktree %q", got, w.Path)
		}
		if !strings.Contains(d.Text(), "It works in its own git worktree "+w.Path+" on branch "+w.Branch) {
			t.Errorf("delegate text = %q", d.Text())
		}
		if len(d.Notes) != 0 {
			t.Errorf("notes for a clean checkout: %q", d.Notes)
		}
	}
	// Two Subs edit the same file at once, each in its own worktree.
	for i, d := range []Delegation{a, b} {
		p := d.Worktree.Path
		os.WriteFile(filepath.Join(p, "a.txt"), []byte("edited by "+d.Title+"\n"), 0o644)
		os.WriteFile(filepath.Join(p, "pkg", "new.txt"), []byte{byte('0' + i)}, 0o644)
		gitIn(t, p, "add", ".")
		gitIn(t, p, "commit", "--quiet", "-m", d.Title)
	}
	if got, _ := os.ReadFile(filepath.Join(f.repo, "a.txt")); string(got) != "one\n" {
		t.Errorf("the Main's checkout changed: a.txt = %q", got)
	}
	if st := gitIn(t, f.repo, "status", "--porcelain"); st != "" {
		t.Errorf("the Main's checkout is dirty:\n%s", st)
	}

	c, err := f.runtime().Close(ctx, mainID, a.RunID, "")
	if err != nil {
		t.Fatal(err)
	}
	w := c.Worktree
	if w == nil || w.Removed || w.State == nil || w.State.Ahead != 1 || len(w.State.Changed) != 3 {
		t.Fatalf("close worktree = %+v", w)
	}
	text := c.Text()
	for _, want := range []string{
		"Worktree: branch " + a.Worktree.Branch + ": 1 commit(s) ahead of " + head[:12] + ", 2 file(s) changed, worktree " + a.Worktree.Path,
		"a.txt", "pkg/new.txt", "Review with git diff " + head[:12] + "..." + a.Worktree.Branch,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("close text lacks %q:\n%s", want, text)
		}
	}
	// The ephemeral run is kept for its worktree, and listed.
	l, err := f.runtime().List(ctx, mainID, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Worktrees) != 1 || l.Worktrees[0].RunID != a.RunID || l.Worktrees[0].Worktree.State.Ahead != 1 {
		t.Fatalf("listed worktrees = %+v", l.Worktrees)
	}
	if !strings.Contains(l.Text(), "- kept worktree of closed run "+short(a.RunID)+" edit a <writer>: branch "+a.Worktree.Branch) {
		t.Errorf("list text:\n%s", l.Text())
	}
	if len(l.Open) != 1 || l.Open[0].Worktree == nil || !strings.Contains(l.Text(), "branch "+b.Worktree.Branch) {
		t.Errorf("open Sub without its worktree: %+v\n%s", l.Open, l.Text())
	}
	// Another Main sees it too: no kept worktree goes unseen.
	if l, _ := f.runtime().List(ctx, "another-main", false); len(l.Worktrees) != 1 {
		t.Errorf("another Main lists %d kept worktrees, want 1", len(l.Worktrees))
	}

	// Both branches merge back; the second conflicts on a.txt, as two
	// Subs' edits of one file should.
	gitIn(t, f.repo, "merge", "--quiet", a.Worktree.Branch)
	if got, _ := os.ReadFile(filepath.Join(f.repo, "a.txt")); string(got) != "edited by edit a\n" {
		t.Errorf("merged a.txt = %q", got)
	}
}

func TestEmptyWorktreeRemovedAtClose(t *testing.T) {
	f := newWorktreeFixture(t)
	d := f.delegate(t, "writer", "nothing")
	c, err := f.runtime().Close(context.Background(), mainID, d.RunID, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Worktree == nil || !c.Worktree.Removed || !strings.Contains(c.Text(), "had no commits and no changes: its worktree and branch were removed") {
		t.Fatalf("close = %+v\n%s", c.Worktree, c.Text())
	}
	if _, err := os.Stat(d.Worktree.Path); !os.IsNotExist(err) {
		t.Errorf("empty worktree still there: %v", err)
	}
	if out := gitIn(t, f.repo, "branch", "--list", "facets/*"); out != "" {
		t.Errorf("branch kept: %q", out)
	}
	if _, ok, _ := f.runtime().Store.LoadRun(mainID, d.RunID); ok {
		t.Error("the closed ephemeral run with nothing kept still has a record")
	}
}

func TestUncommittedWorkIsKept(t *testing.T) {
	f := newWorktreeFixture(t)
	d := f.delegate(t, "writer", "dirty")
	os.WriteFile(filepath.Join(d.Worktree.Path, "a.txt"), []byte("half done\n"), 0o644)
	c, err := f.runtime().Close(context.Background(), mainID, d.RunID, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Worktree.Removed || !strings.Contains(c.Text(), "0 commit(s) ahead") || !strings.Contains(c.Text(), "1 uncommitted change(s) in "+d.Worktree.Path) || !strings.Contains(c.Text(), "uncommitted:  M a.txt") {
		t.Fatalf("close text:\n%s", c.Text())
	}
	// Discard refuses, naming the change; --force removes it.
	_, err = f.runtime().CloseRun(context.Background(), CloseRequest{Ref: short(d.RunID), Discard: true})
	var unc *worktree.UncommittedError
	if !errors.As(err, &unc) || !strings.Contains(err.Error(), "M a.txt") {
		t.Fatalf("discard of uncommitted work: %v", err)
	}
	r, err := f.runtime().CloseRun(context.Background(), CloseRequest{Ref: short(d.RunID), Discard: true, Force: true})
	if err != nil || r.Discarded == nil || r.Text() != "Removed worktree "+d.Worktree.Path+" and branch "+d.Worktree.Branch+"." {
		t.Fatalf("forced discard: %+v, %v", r, err)
	}
	if _, ok, _ := f.runtime().Store.LoadRun(mainID, d.RunID); ok {
		t.Error("the discarded ephemeral run still has a record")
	}
}

func TestCloseDiscardRefusesUnmergedCommits(t *testing.T) {
	f := newWorktreeFixture(t)
	d := f.delegate(t, "writer", "work")
	p := d.Worktree.Path
	commitIn(t, p, "c.txt", "precious work")

	// close --discard of the open run: closed, then the discard refused.
	_, err := f.runtime().CloseRun(context.Background(), CloseRequest{MainSessionID: mainID, Ref: d.RunID, Discard: true})
	if err == nil || !strings.Contains(err.Error(), "Closed Sub: work") || !strings.Contains(err.Error(), "1 commit(s) that no other branch has") || !strings.Contains(err.Error(), "precious work") {
		t.Fatalf("close --discard: %v", err)
	}
	if got := f.openRuns(mainID); len(got) != 0 {
		t.Errorf("run still open: %v", got)
	}
	if _, err := os.Stat(filepath.Join(p, "c.txt")); err != nil {
		t.Fatalf("the refused discard removed work: %v", err)
	}
	gitIn(t, f.repo, "merge", "--quiet", d.Worktree.Branch)
	if _, err := f.runtime().CloseRun(context.Background(), CloseRequest{Ref: d.RunID, Discard: true}); err != nil {
		t.Fatalf("discard after merge: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("worktree left after discard: %v", err)
	}
}

func TestWorktreeRefusals(t *testing.T) {
	t.Run("not a repository", func(t *testing.T) {
		f := newWorktreeFixture(t)
		m := *f.manifest
		m.Cwd = t.TempDir()
		_, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: &m, MainSessionID: mainID, Profile: "writer", Title: "x", Task: "x"})
		if err == nil || !strings.Contains(err.Error(), "is not in a git work tree; start the Main in a git repository, or set \"workspace\": \"shared\"") {
			t.Fatalf("delegate outside git: %v", err)
		}
		if len(f.subTabs()) != 0 || len(f.openRuns(mainID)) != 0 {
			t.Error("a refused delegate opened a tab or took a slot")
		}
	})
	t.Run("bare repository", func(t *testing.T) {
		f := newWorktreeFixture(t)
		bare := filepath.Join(t.TempDir(), "b.git")
		gitIn(t, filepath.Dir(bare), "clone", "--quiet", "--bare", f.repo, bare)
		m := *f.manifest
		m.Cwd = bare
		_, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: &m, MainSessionID: mainID, Profile: "writer", Title: "x", Task: "x"})
		if err == nil || !strings.Contains(err.Error(), "bare git repository") {
			t.Fatalf("delegate in a bare repository: %v", err)
		}
	})
	t.Run("path exists", func(t *testing.T) {
		f := newWorktreeFixture(t)
		// Every worktree path is taken: the launch fails and rolls back.
		rt := f.runtime()
		rt.WorktreeDir = filepath.Join(f.dir, "file")
		os.WriteFile(rt.WorktreeDir, nil, 0o600)
		_, err := rt.Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "x", Task: "x"})
		if err == nil || !strings.Contains(err.Error(), "create worktree") {
			t.Fatalf("delegate with an unusable worktree dir: %v", err)
		}
		if len(f.subTabs()) != 0 || len(f.openRuns(mainID)) != 0 {
			t.Error("a failed worktree left a tab or a slot")
		}
	})
}

func TestWorktreeNotes(t *testing.T) {
	f := newWorktreeFixture(t)
	os.WriteFile(filepath.Join(f.repo, ".gitignore"), []byte(".env\n"), 0o644)
	gitIn(t, f.repo, "add", ".gitignore")
	gitIn(t, f.repo, "commit", "--quiet", "-m", "ignore")
	os.WriteFile(filepath.Join(f.repo, ".env"), []byte("KEY=1\n"), 0o600)
	os.MkdirAll(filepath.Join(f.repo, ".pi", "facets"), 0o755)
	os.WriteFile(filepath.Join(f.repo, worktree.IncludeFile), []byte(".env\n"), 0o644)
	os.WriteFile(filepath.Join(f.repo, "a.txt"), []byte("uncommitted\n"), 0o644)
	gitIn(t, f.repo, "checkout", "--quiet", "--detach")

	// The Main works in a subdirectory: so does the Sub.
	m := *f.manifest
	m.Cwd = filepath.Join(f.repo, "pkg")
	d, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: &m, MainSessionID: mainID, Profile: "writer", Title: "notes", Task: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.pane(d.RunID).Cwd; got != filepath.Join(d.Worktree.Path, "pkg") {
		t.Errorf("Sub cwd %q, want pkg in the worktree", got)
	}
	want := []string{
		// .pi/facets/worktree-include is untracked too: 2 changes.
		"The worktree starts at the commit " + d.Worktree.Base[:12] + " of a detached HEAD: 2 uncommitted change(s) in the Main's checkout are not in it.",
		"Copied 1 ignored file(s) listed in .pi/facets/worktree-include.",
	}
	if !slices.Equal(d.Notes, want) {
		t.Errorf("notes = %q\nwant %q", d.Notes, want)
	}
	if got, _ := os.ReadFile(filepath.Join(d.Worktree.Path, ".env")); string(got) != "KEY=1\n" {
		t.Errorf(".env in the worktree = %q", got)
	}
}

func TestWorktreeRemovedByHandBeforeClose(t *testing.T) {
	f := newWorktreeFixture(t)
	d := f.delegate(t, "writer", "hand")
	p := d.Worktree.Path
	commitIn(t, p, "c.txt", "c")
	gitIn(t, f.repo, "worktree", "remove", p)
	c, err := f.runtime().Close(context.Background(), mainID, d.RunID, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Worktree.Removed || !strings.Contains(c.Text(), "1 commit(s) ahead") || !strings.Contains(c.Text(), "its worktree was removed by hand (the branch is kept)") {
		t.Fatalf("close text:\n%s", c.Text())
	}
}

func TestRepositoryMovedWhileSubRuns(t *testing.T) {
	f := newWorktreeFixture(t)
	d := f.delegate(t, "writer", "moved")
	if err := os.Rename(f.repo, f.repo+"-moved"); err != nil {
		t.Fatal(err)
	}
	c, err := f.runtime().Close(context.Background(), mainID, d.RunID, "")
	if err != nil {
		t.Fatalf("close after the repository moved: %v", err)
	}
	if !strings.Contains(c.Text(), "the repository at "+f.repo+" is gone (moved or deleted); the worktree at "+d.Worktree.Path+" is kept") {
		t.Fatalf("close text:\n%s", c.Text())
	}
	if len(f.openRuns(mainID)) != 0 {
		t.Error("run still holds its slot")
	}
}

func TestFourWorktreeSubsAtOnce(t *testing.T) {
	f := newWorktreeFixture(t)
	var wg sync.WaitGroup
	errs := make([]error, MaxOpenSubs)
	ds := make([]Delegation, MaxOpenSubs)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds[i], errs[i] = f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "w", Task: "x"})
		}()
	}
	wg.Wait()
	branches := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("delegate %d: %v", i, err)
		}
		branches[ds[i].Worktree.Branch] = true
	}
	if len(branches) != MaxOpenSubs {
		t.Errorf("branches %v, want %d distinct", branches, MaxOpenSubs)
	}
	if n := len(strings.Split(gitIn(t, f.repo, "worktree", "list"), "\n")); n != MaxOpenSubs+1 {
		t.Errorf("git lists %d worktrees, want %d", n, MaxOpenSubs+1)
	}
}

func TestResumeReopensWorktree(t *testing.T) {
	f := newWorktreeFixture(t)
	ctx := context.Background()
	d := f.delegate(t, "reviewer", "persist")
	p := d.Worktree.Path
	commitIn(t, p, "r.txt", "r")
	f.saveSession(t, d.RunID, "sess-wt")
	f.close(d.RunID)
	// The user removed the worktree by hand; resume brings it back on the branch.
	gitIn(t, f.repo, "worktree", "remove", p)
	r, err := f.runtime().Delegate(ctx, DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "reviewer", Title: "again", Task: "x", ResumeSessionID: "sess-wt"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Worktree == nil || r.Worktree.Path != p || r.Worktree.Branch != d.Worktree.Branch {
		t.Fatalf("resumed worktree = %+v, want %+v", r.Worktree, d.Worktree)
	}
	if got := f.pane(r.RunID).Cwd; got != p {
		t.Errorf("resumed Sub cwd %q, want %q", got, p)
	}
	if _, err := os.Stat(filepath.Join(p, "r.txt")); err != nil {
		t.Errorf("the resumed worktree lacks the branch's commit: %v", err)
	}
}

// BenchmarkCensus is what a starting Main pays to count leftovers and kept
// worktrees: 100 closed runs with kept worktrees in 20 Main sessions
// (docs/performance.md).
func BenchmarkCensus(b *testing.B) {
	s := Store{Dir: b.TempDir()}
	w := &worktree.Worktree{Repo: "/r", CommonDir: "/r/.git", Path: "/w", Branch: "facets/p/x", Base: "abc"}
	for m := range 20 {
		for r := range 5 {
			if err := s.SaveRun(&Run{Version: RunVersion, RunID: fmt.Sprintf("r%d-%d", m, r), MainSessionID: fmt.Sprintf("main%d", m), ClosedAt: 1, Worktree: w}); err != nil {
				b.Fatal(err)
			}
		}
	}
	root := filepath.Join(b.TempDir(), "run")
	for b.Loop() {
		if c := s.Census(root, time.Now()); c.KeptWorktrees != 100 || c.Leftovers != 0 {
			b.Fatalf("%+v", c)
		}
	}
}

func TestChooseBranch(t *testing.T) {
	const id = "0192a0b1-aaaa-bbbb"
	for _, tc := range []struct {
		taken []string
		want  string
	}{
		{nil, "facets/writer/0192a0b1"},
		{[]string{"facets/writer/0192a0b1"}, "facets/writer/" + id},
		{[]string{"facets/other/0192a0b1"}, "facets/writer/0192a0b1"},
	} {
		got := chooseBranch("writer", id, func(b string) bool { return slices.Contains(tc.taken, b) })
		if got != tc.want {
			t.Errorf("taken %q: chose %q, want %q", tc.taken, got, tc.want)
		}
	}
}

// TestGcWorktrees: gc never removes a worktree that holds work found
// nowhere else; a merged, clean one of a closed run is a leftover it
// removes; a Sub that died keeps its worktree with work, and loses an
// empty one, when gc releases its run.
func TestGcWorktrees(t *testing.T) {
	f := newWorktreeFixture(t)
	ctx := context.Background()
	commit := func(d Delegation, name string) { commitIn(t, d.Worktree.Path, name, name) }
	merged := f.delegate(t, "writer", "merged")
	commit(merged, "m.txt")
	unmerged := f.delegate(t, "writer", "unmerged")
	commit(unmerged, "u.txt")
	dirty := f.delegate(t, "writer", "dirty")
	os.WriteFile(filepath.Join(dirty.Worktree.Path, "a.txt"), []byte("half\n"), 0o644)
	for _, d := range []Delegation{merged, unmerged, dirty} {
		f.close(d.RunID)
	}
	gitIn(t, f.repo, "merge", "--quiet", merged.Worktree.Branch)

	// Two Subs that died without a close: one did work, one did not.
	diedWork := f.delegate(t, "writer", "died with work")
	commit(diedWork, "d.txt")
	diedEmpty := f.delegate(t, "writer", "died empty")
	for _, d := range []Delegation{diedWork, diedEmpty} {
		release, err := f.sub(d.RunID).HoldPresence()
		if err != nil {
			t.Fatal(err)
		}
		release()
		f.Run("tab", "close", f.pane(d.RunID).TabID)
	}

	rt := f.runtime()
	c, err := rt.GC(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]LeftoverKind{}
	for _, l := range c.Leftovers {
		got[l.RunID] = l.Kind
	}
	want := map[string]LeftoverKind{merged.RunID: LeftoverWorktree, diedWork.RunID: LeftoverSubExited, diedEmpty.RunID: LeftoverSubExited}
	if !maps.Equal(got, want) {
		t.Fatalf("leftovers %v, want %v\n%s", got, want, c.Text())
	}
	if !strings.Contains(c.Text(), "every commit of branch "+merged.Worktree.Branch+" is on another branch or tag") {
		t.Errorf("dry run text:\n%s", c.Text())
	}

	if _, err := rt.GC(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, d := range []Delegation{merged, diedEmpty} {
		if _, err := os.Stat(d.Worktree.Path); !os.IsNotExist(err) {
			t.Errorf("%s: worktree not removed: %v", d.Title, err)
		}
	}
	for _, d := range []Delegation{unmerged, dirty, diedWork} {
		if _, err := os.Stat(d.Worktree.Path); err != nil {
			t.Errorf("%s: gc removed a worktree with work: %v", d.Title, err)
		}
	}
	l, err := f.runtime().List(ctx, mainID, true)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, k := range l.Worktrees {
		kept = append(kept, k.Title)
	}
	slices.Sort(kept)
	if !slices.Equal(kept, []string{"died with work", "dirty", "unmerged"}) || len(l.Open) != 0 {
		t.Errorf("after gc, kept worktrees %q and open %v", kept, l.Open)
	}
}

// After a resume, the worktree belongs to the new run: the old closed run
// no longer lists it, and neither discard nor gc can remove it from under
// the resumed Sub.
func TestResumeHandsTheWorktreeOver(t *testing.T) {
	f := newWorktreeFixture(t)
	ctx := context.Background()
	d := f.delegate(t, "reviewer", "persist")
	p := d.Worktree.Path
	commitIn(t, p, "r.txt", "r")
	f.saveSession(t, d.RunID, "sess-h")
	f.close(d.RunID)
	gitIn(t, f.repo, "merge", "--quiet", d.Worktree.Branch) // merged: nothing unique is left
	r, err := f.runtime().Delegate(ctx, DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "reviewer", Title: "again", Task: "x", ResumeSessionID: "sess-h"})
	if err != nil {
		t.Fatal(err)
	}
	old := f.run(d.RunID)
	if old.Worktree != nil {
		t.Fatalf("the old run still claims the worktree after the resume: %+v", old.Worktree)
	}
	// A record that still claims it (written before the hand-over, or by a
	// resume that crashed in between): the open run's use still protects it.
	old.Worktree = f.run(r.RunID).Worktree
	if err := f.runtime().Store.SaveRun(old); err != nil {
		t.Fatal(err)
	}
	l, err := f.runtime().List(ctx, mainID, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Worktrees) != 0 {
		t.Errorf("the resumed worktree is still listed as the closed run's: %+v", l.Worktrees)
	}
	if _, err := f.runtime().CloseRun(ctx, CloseRequest{Ref: d.RunID, Discard: true}); err == nil {
		t.Error("discard of the old run succeeded")
	}
	c, _ := f.runtime().GC(ctx, true)
	for _, lo := range c.Leftovers {
		if lo.RunID == d.RunID {
			t.Errorf("gc treats the old run as a leftover: %+v", lo)
		}
	}
	if _, err := os.Stat(filepath.Join(p, "r.txt")); err != nil {
		t.Fatalf("the resumed Sub's worktree was removed: %v", err)
	}
	if got := f.pane(r.RunID).Cwd; got != p {
		t.Errorf("resumed cwd %q", got)
	}
}

// A Main in a directory the commit does not have starts its Sub at the
// worktree's top, never outside it, and says so.
func TestMainInUntrackedDirectory(t *testing.T) {
	f := newWorktreeFixture(t)
	m := *f.manifest
	m.Cwd = filepath.Join(f.repo, "newpkg")
	os.MkdirAll(m.Cwd, 0o755)
	os.WriteFile(filepath.Join(m.Cwd, "n.go"), []byte("package n\n"), 0o644)
	d, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: &m, MainSessionID: mainID, Profile: "writer", Title: "x", Task: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.pane(d.RunID).Cwd; got != d.Worktree.Path {
		t.Errorf("Sub cwd %q, want the worktree top %q", got, d.Worktree.Path)
	}
	if !slices.Contains(d.Notes, "The Main's directory newpkg is not in that commit: the Sub starts at the worktree's top.") {
		t.Errorf("notes %q", d.Notes)
	}
}

// A launch that fails after its worktree was made, when the worktree
// cannot be removed (a repository hook wrote into it), keeps the run
// record, closed, so the worktree is not lost from facets list.
func TestFailedLaunchKeepsAWorktreeItCannotRemove(t *testing.T) {
	f := newWorktreeFixture(t)
	hook := filepath.Join(f.repo, ".git", "hooks", "post-checkout")
	os.MkdirAll(filepath.Dir(hook), 0o755)
	os.WriteFile(hook, []byte("#!/bin/sh\necho made by a hook > hook-output.txt\n"), 0o755)
	f.control(fakeControl{Fail: map[string]fakeFailure{"tab create": {Code: "workspace_not_found", Message: "boom"}}})
	_, err := f.runtime().Delegate(context.Background(), DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "fails", Task: "x"})
	if err == nil || !strings.Contains(err.Error(), "is kept") || !strings.Contains(err.Error(), "hook-output.txt") {
		t.Fatalf("delegate: %v; want the launch failure and the kept worktree", err)
	}
	if len(f.openRuns(mainID)) != 0 {
		t.Error("the failed launch holds a slot")
	}
	f.control(fakeControl{})
	l, err := f.runtime().List(context.Background(), mainID, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Worktrees) != 1 || !strings.Contains(l.Worktrees[0].Worktree.Summary, "1 uncommitted change(s)") {
		t.Fatalf("kept worktrees %+v", l.Worktrees)
	}
}

// The Main's repository moved away: discard cannot check the worktree, so
// it refuses; --force forgets it and leaves its directory.
func TestDiscardAfterTheRepositoryMoved(t *testing.T) {
	f := newWorktreeFixture(t)
	d := f.delegate(t, "writer", "moved")
	os.WriteFile(filepath.Join(d.Worktree.Path, "w.txt"), []byte("w\n"), 0o644)
	f.close(d.RunID)
	if err := os.Rename(f.repo, f.repo+"-moved"); err != nil {
		t.Fatal(err)
	}
	_, err := f.runtime().CloseRun(context.Background(), CloseRequest{Ref: d.RunID, Discard: true})
	if err == nil || !strings.Contains(err.Error(), "is gone, so git cannot check worktree") {
		t.Fatalf("discard: %v", err)
	}
	r, err := f.runtime().CloseRun(context.Background(), CloseRequest{Ref: d.RunID, Discard: true, Force: true})
	if err != nil || !strings.HasPrefix(r.Text(), "Forgot worktree "+d.Worktree.Path) {
		t.Fatalf("forced discard: %+v, %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(d.Worktree.Path, "w.txt")); err != nil {
		t.Errorf("the forced discard removed the directory it cannot check: %v", err)
	}
	if l, _ := f.runtime().List(context.Background(), mainID, true); len(l.Worktrees) != 0 {
		t.Errorf("still listed: %+v", l.Worktrees)
	}
}

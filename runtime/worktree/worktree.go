// Package worktree gives a Sub its own git worktree of the Main's
// repository, on a branch of its own, and reports what came back: commits
// ahead of the base, changed files and uncommitted changes. It runs the
// real git command, so every rule (locks, refs, ignore syntax) is git's own.
package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/facets-dev/facets/internal/safefile"
)

// Git runs the git command.
type Git struct {
	// Bin is the git executable; empty means "git" on PATH.
	Bin string
}

// Repo is the git work tree a Main works in.
type Repo struct {
	// Top is the work tree's top directory.
	Top string
	// CommonDir is the repository's git directory shared by all its work trees.
	CommonDir string
	// Head is the commit HEAD names.
	Head string
	// Branch is HEAD's branch, or empty when HEAD is detached.
	Branch string
	// Prefix is the Main's directory relative to Top ("" at the top).
	Prefix string
}

// Worktree is a Sub's linked work tree, as its run records it.
type Worktree struct {
	// Repo is the top of the Main's work tree the worktree was made from.
	Repo string `json:"repo"`
	// CommonDir is the repository's shared git directory.
	CommonDir string `json:"commonDir"`
	// Path is the worktree's top directory.
	Path string `json:"path"`
	// Branch is the worktree's branch (facets/<profile>/<run>).
	Branch string `json:"branch"`
	// Base is the commit the branch started at.
	Base string `json:"base"`
}

// ErrNotRepository is returned by Find for a directory outside any git work tree.
var ErrNotRepository = errors.New("not in a git work tree")

// Error is a git command that failed, with what git said.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return "git " + strings.Join(e.Args, " ") + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// run runs git with args in dir and returns its standard output. The
// environment loses the variables that would point git at another
// repository than dir's (a Main started from a git hook has them), and
// messages are in English so errors read the same everywhere.
func (g Git) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	bin := g.Bin
	if bin == "" {
		bin = "git"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(os.Environ())
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.Bytes(), &Error{Args: args, Stderr: stderr.String(), Err: err}
	}
	return out.Bytes(), nil
}

func gitEnv(env []string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES", "LC_ALL", "LANGUAGE":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// Find reports the work tree that holds dir. A directory outside any work
// tree gives ErrNotRepository; a bare repository, a git directory and a
// repository without commits are refused with what to do.
func (g Git) Find(ctx context.Context, dir string) (Repo, error) {
	out, err := g.run(ctx, dir, "rev-parse", "--is-bare-repository", "--is-inside-work-tree")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return Repo{}, fmt.Errorf("%s is %w", dir, ErrNotRepository)
		}
		return Repo{}, err
	}
	f := strings.Fields(string(out))
	if len(f) >= 1 && f[0] == "true" {
		return Repo{}, fmt.Errorf("%s is a bare git repository, which has no work tree to branch from; start the Main in a clone (git clone %s)", dir, dir)
	}
	if len(f) < 2 || f[1] != "true" {
		return Repo{}, fmt.Errorf("%s is inside a git directory, not a work tree; start the Main in the work tree", dir)
	}
	// Three plain queries, each answered on its line; --git-common-dir may
	// be relative to dir (--path-format=absolute needs git 2.31).
	out, err = g.run(ctx, dir, "rev-parse", "--show-toplevel", "--git-common-dir", "--show-prefix")
	if err != nil {
		return Repo{}, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < 2 || lines[0] == "" || lines[1] == "" {
		return Repo{}, fmt.Errorf("git rev-parse in %s: unexpected answer %q", dir, out)
	}
	r := Repo{Top: lines[0], CommonDir: lines[1]}
	if !filepath.IsAbs(r.CommonDir) {
		r.CommonDir = filepath.Join(dir, r.CommonDir)
	}
	if len(lines) > 2 {
		r.Prefix = strings.TrimSuffix(lines[2], "/")
	}
	head, err := g.run(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil || len(bytes.TrimSpace(head)) == 0 {
		return Repo{}, fmt.Errorf("the git repository at %s has no commits yet; commit once, then delegate again", r.Top)
	}
	r.Head = string(bytes.TrimSpace(head))
	if b, err := g.run(ctx, dir, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
		r.Branch = string(bytes.TrimSpace(b))
	}
	return r, nil
}

// Dirty counts the changes in r's work tree that a new worktree does not
// get: modified, staged, deleted and untracked (not ignored) paths.
func (g Git) Dirty(ctx context.Context, r Repo) (int, error) {
	out, err := g.run(ctx, r.Top, "status", "--porcelain", "-z", "--untracked-files=normal")
	if err != nil {
		return 0, err
	}
	n := 0
	recs := bytes.Split(out, []byte{0})
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) < 3 {
			continue
		}
		n++
		if rec[0] == 'R' || rec[0] == 'C' {
			i++ // a rename or copy is followed by its source path
		}
	}
	return n, nil
}

// BranchName is the branch a Sub of profile gets: facets/<profile>/<id>,
// with the parts of a profile name git does not allow in a ref replaced.
func BranchName(profile, id string) string {
	p := strings.ReplaceAll(profile, "..", "-")
	if strings.HasSuffix(p, ".lock") || strings.HasSuffix(p, ".") {
		p += "-"
	}
	return "facets/" + p + "/" + id
}

// BranchExists reports whether r has a local branch named name.
func (g Git) BranchExists(ctx context.Context, r Repo, name string) bool {
	_, err := g.run(ctx, r.Top, "show-ref", "--verify", "--quiet", "refs/heads/"+name)
	return err == nil
}

// Create adds a worktree of r at path on a new branch starting at r's HEAD.
// path must not exist yet; git refuses a branch that exists.
func (g Git) Create(ctx context.Context, r Repo, path, branch string) (Worktree, error) {
	if _, err := os.Lstat(path); err == nil {
		return Worktree{}, fmt.Errorf("worktree path %s already exists; move it away or remove it", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Worktree{}, fmt.Errorf("create worktree: %w", err)
	}
	w := Worktree{Repo: r.Top, CommonDir: r.CommonDir, Path: path, Branch: branch, Base: r.Head}
	unlock, err := lockRepo(w)
	if err != nil {
		return Worktree{}, err
	}
	defer unlock()
	if _, err := g.run(ctx, r.Top, "worktree", "add", "--quiet", "-b", branch, path, r.Head); err != nil {
		return Worktree{}, fmt.Errorf("create worktree %s on branch %s: %w", path, branch, err)
	}
	return w, nil
}

// Reopen makes w's directory a worktree on w.Branch again: a no-op when it
// still is one; otherwise a new worktree at the same path on the branch if
// it exists, or on a new branch of that name at w.Base.
func (g Git) Reopen(ctx context.Context, w Worktree) error {
	if g.registered(ctx, w) {
		return nil
	}
	unlock, err := lockRepo(w)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Lstat(w.Path); err == nil {
		return fmt.Errorf("reopen worktree: %s exists but is not the worktree of branch %s; move it away", w.Path, w.Branch)
	}
	// A worktree deleted by hand is still in git's list until pruned.
	if _, err := g.run(ctx, w.Repo, "worktree", "prune"); err != nil {
		return fmt.Errorf("reopen worktree: %w", err)
	}
	args := []string{"worktree", "add", "--quiet", w.Path, w.Branch}
	if !g.branchExists(ctx, w) {
		args = []string{"worktree", "add", "--quiet", "-b", w.Branch, w.Path, w.Base}
	}
	if _, err := g.run(ctx, w.Repo, args...); err != nil {
		return fmt.Errorf("reopen worktree %s: %w", w.Path, err)
	}
	return nil
}

// registered reports whether git lists w.Path as a worktree on w.Branch.
func (g Git) registered(ctx context.Context, w Worktree) bool {
	if _, err := os.Stat(w.Path); err != nil {
		return false
	}
	out, err := g.run(ctx, w.Repo, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return false
	}
	path := ""
	for _, f := range bytes.Split(out, []byte{0}) {
		s := string(f)
		switch {
		case strings.HasPrefix(s, "worktree "):
			path = strings.TrimPrefix(s, "worktree ")
		case s == "branch refs/heads/"+w.Branch:
			if samePath(path, w.Path) {
				return true
			}
		}
	}
	return false
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// State is what a Sub's worktree holds when it is looked at.
type State struct {
	// Missing is true when the worktree's directory is gone (removed by hand).
	Missing bool `json:"missing,omitempty"`
	// RepoMissing is true when the Main's repository cannot be read any more.
	RepoMissing bool `json:"repoMissing,omitempty"`
	// BranchMissing is true when the branch was deleted.
	BranchMissing bool `json:"branchMissing,omitempty"`
	// Ahead counts the branch's commits not in the base.
	Ahead int `json:"ahead"`
	// Changed is git diff --stat of base...branch, one line per file and a summary.
	Changed []string `json:"changed,omitempty"`
	// Uncommitted lists git status --porcelain lines of the worktree.
	Uncommitted []string `json:"uncommitted,omitempty"`
	// Head says where the worktree's HEAD is when it left the facets
	// branch ("branch fix/x", "a detached HEAD at abc123"); empty while
	// it is on the branch.
	Head string `json:"head,omitempty"`
	// Stray lists, as "<sha12> <subject>", commits at the worktree's HEAD
	// that no branch, tag or remote holds: work a removal would lose.
	Stray []string `json:"stray,omitempty"`
}

// Empty reports whether the worktree holds no work: no commits past the
// base and nothing uncommitted.
func (s State) Empty() bool {
	return !s.Missing && !s.RepoMissing && !s.BranchMissing && s.Ahead == 0 && len(s.Uncommitted) == 0 && s.Head == "" && len(s.Stray) == 0
}

// Gone reports whether neither the worktree nor its branch is left.
func (s State) Gone() bool { return s.Missing && s.BranchMissing }

// Summary is the state in one line: branch, commits ahead, files changed,
// uncommitted changes.
func (s State) Summary(w Worktree) string {
	switch {
	case s.RepoMissing:
		return fmt.Sprintf("branch %s: the repository at %s is gone (moved or deleted); the worktree at %s is kept", w.Branch, w.Repo, w.Path)
	case s.Gone():
		return fmt.Sprintf("branch %s and its worktree %s are gone", w.Branch, w.Path)
	case s.BranchMissing:
		return fmt.Sprintf("branch %s was deleted; the worktree at %s is kept", w.Branch, w.Path)
	}
	files := len(s.Changed)
	if files > 0 {
		files-- // the summary line
	}
	line := fmt.Sprintf("branch %s: %d commit(s) ahead of %s, %d file(s) changed", w.Branch, s.Ahead, ShortCommit(w.Base), files)
	switch {
	case s.Missing:
		line += "; its worktree was removed by hand (the branch is kept)"
	case len(s.Uncommitted) > 0:
		line += fmt.Sprintf(", %d uncommitted change(s) in %s", len(s.Uncommitted), w.Path)
	default:
		line += ", worktree " + w.Path
	}
	if s.Head != "" {
		line += "; its HEAD is now on " + s.Head
	}
	if len(s.Stray) > 0 {
		line += fmt.Sprintf("; %d commit(s) at its HEAD are on no branch: %s", len(s.Stray), strings.Join(s.Stray, "; "))
	}
	return line
}

// ShortCommit is a commit id cut to 12 hex digits, as git prints it.
func ShortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// Inspect reads w's state: commits ahead of the base, the diffstat of the
// branch against the base, and the worktree's uncommitted changes.
func (g Git) Inspect(ctx context.Context, w Worktree) (State, error) {
	var s State
	if fi, err := os.Stat(w.CommonDir); err != nil || !fi.IsDir() {
		s.RepoMissing = true
		return s, nil
	}
	if _, err := os.Stat(w.Path); err != nil {
		s.Missing = true
	}
	if !g.branchExists(ctx, w) {
		s.BranchMissing = true
		return s, nil
	}
	out, err := g.inRepo(ctx, w, "rev-list", "--count", w.Base+".."+"refs/heads/"+w.Branch)
	if err != nil {
		return s, fmt.Errorf("inspect worktree %s: %w", w.Path, err)
	}
	if s.Ahead, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return s, fmt.Errorf("inspect worktree %s: git rev-list answered %q", w.Path, out)
	}
	if s.Ahead > 0 {
		out, err = g.inRepo(ctx, w, "diff", "--stat=200", w.Base+"..."+"refs/heads/"+w.Branch)
		if err != nil {
			return s, fmt.Errorf("inspect worktree %s: %w", w.Path, err)
		}
		s.Changed = lines(out)
	}
	if !s.Missing {
		out, err = g.run(ctx, w.Path, "status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none")
		if err != nil {
			return s, fmt.Errorf("inspect worktree %s: %w", w.Path, err)
		}
		s.Uncommitted = lines(out)
		changed, err := g.includedChanges(ctx, w)
		if err != nil {
			return s, fmt.Errorf("inspect worktree %s: %w", w.Path, err)
		}
		s.Uncommitted = append(s.Uncommitted, changed...)
		if s.Head, s.Stray, err = g.head(ctx, w); err != nil {
			return s, fmt.Errorf("inspect worktree %s: %w", w.Path, err)
		}
	}
	return s, nil
}

// includedChanges lists, as status-like lines ("!M .env"), the ignored
// files of w that its repository's IncludeFile names and that differ from
// the Main's copy or are new: git status never shows them, and removing
// the worktree would delete them. Build output and other ignored files
// the list does not name are not work.
func (g Git) includedChanges(ctx context.Context, w Worktree) ([]string, error) {
	include := filepath.Join(w.Repo, IncludeFile)
	if fi, err := os.Lstat(include); err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	out, err := g.run(ctx, w.Path, "ls-files", "-z", "--others", "--ignored", "--exclude-from="+include)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, p := range bytes.Split(out, []byte{0}) {
		rel := string(p)
		if rel == "" {
			continue
		}
		mine, err := os.ReadFile(filepath.Join(w.Path, rel))
		if err != nil {
			continue // not a readable file: nothing a removal would lose
		}
		theirs, err := os.ReadFile(filepath.Join(w.Repo, rel))
		switch {
		case err != nil:
			changed = append(changed, "!A "+rel)
		case !bytes.Equal(mine, theirs):
			changed = append(changed, "!M "+rel)
		}
	}
	return changed, nil
}

// head reports where w's HEAD is when it is not on w's branch, and the
// commits at HEAD that no branch, tag or remote holds (a Sub that
// committed on a detached HEAD).
func (g Git) head(ctx context.Context, w Worktree) (string, []string, error) {
	var where string
	if b, err := g.run(ctx, w.Path, "symbolic-ref", "--quiet", "HEAD"); err == nil {
		if ref := strings.TrimSpace(string(b)); ref != "refs/heads/"+w.Branch {
			where = "branch " + strings.TrimPrefix(ref, "refs/heads/")
		}
	} else {
		sha, err := g.run(ctx, w.Path, "rev-parse", "--short=12", "HEAD")
		if err != nil {
			return "", nil, err
		}
		where = "a detached HEAD at " + strings.TrimSpace(string(sha))
	}
	if where == "" {
		return "", nil, nil
	}
	out, err := g.run(ctx, w.Path, "log", "--format=%h %s", "--abbrev=12", "HEAD", "--not", "--branches", "--tags", "--remotes")
	if err != nil {
		return "", nil, err
	}
	return where, lines(out), nil
}

// inRepo runs git on w's repository from wherever it can still be
// reached: the Main's work tree, else the worktree, else the git directory
// itself (the Main's work tree was moved or was a linked worktree since
// removed).
func (g Git) inRepo(ctx context.Context, w Worktree, args ...string) ([]byte, error) {
	for _, dir := range []string{w.Repo, w.Path} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return g.run(ctx, dir, args...)
		}
	}
	return g.run(ctx, w.CommonDir, append([]string{"--git-dir=" + w.CommonDir}, args...)...)
}

func lines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return out
}

// UniqueCommits lists, newest first as "<sha12> <subject>", the commits of
// w's branch that no other branch or tag holds: the work a removal of the
// branch would lose.
func (g Git) UniqueCommits(ctx context.Context, w Worktree) ([]string, error) {
	// --exclude names the branch as --branches sees it, without refs/heads/.
	args := []string{"log", "--format=%h %s", "--abbrev=12", "refs/heads/" + w.Branch, "--not", "--exclude=" + w.Branch, "--branches", "--tags", "--remotes"}
	if fi, err := os.Stat(w.Repo); err == nil && fi.IsDir() {
		// The Main's own HEAD (a detached one holds commits no branch has).
		args = append(args, "HEAD")
	}
	out, err := g.inRepo(ctx, w, args...)
	if err != nil {
		return nil, fmt.Errorf("commits of branch %s: %w", w.Branch, err)
	}
	return lines(out), nil
}

// Remove deletes w's worktree and its branch. Without force it refuses a
// worktree with uncommitted changes (submodules included), commits at its
// HEAD that are on no branch, and a branch whose commits no other branch or
// tag holds, naming them; the checks and the removal run under the
// repository lock, so nothing can slip in between.
func (g Git) Remove(ctx context.Context, w Worktree, force bool) error {
	unlock, err := lockRepo(w)
	if err != nil {
		return err
	}
	defer unlock()
	_, statErr := os.Stat(w.Path)
	present := statErr == nil
	if !force {
		if present {
			out, err := g.run(ctx, w.Path, "status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none")
			if err != nil {
				return fmt.Errorf("remove worktree %s: %w", w.Path, err)
			}
			changes := lines(out)
			included, err := g.includedChanges(ctx, w)
			if err != nil {
				return fmt.Errorf("remove worktree %s: %w", w.Path, err)
			}
			if changes = append(changes, included...); len(changes) > 0 {
				return &UncommittedError{Path: w.Path, Changes: changes}
			}
			where, stray, err := g.head(ctx, w)
			if err != nil {
				return fmt.Errorf("remove worktree %s: %w", w.Path, err)
			}
			if len(stray) > 0 {
				return &UnmergedError{Branch: w.Branch, Commits: stray, Head: where, Path: w.Path}
			}
		}
		if g.branchExists(ctx, w) {
			unique, err := g.UniqueCommits(ctx, w)
			if err != nil {
				return err
			}
			if len(unique) > 0 {
				return &UnmergedError{Branch: w.Branch, Commits: unique}
			}
		}
	}
	if present {
		// One --force: facets has checked the work above (or was told to
		// drop it); git alone refuses any worktree with submodules.
		args := []string{"worktree", "remove", "--force", w.Path}
		if force {
			args = []string{"worktree", "remove", "--force", "--force", w.Path}
		}
		if _, err := g.inRepo(ctx, w, args...); err != nil {
			return fmt.Errorf("remove worktree %s: %w", w.Path, err)
		}
	} else if _, err := g.inRepo(ctx, w, "worktree", "prune"); err != nil {
		return fmt.Errorf("remove worktree %s: %w", w.Path, err)
	}
	if g.branchExists(ctx, w) {
		if _, err := g.inRepo(ctx, w, "branch", "-D", "--quiet", w.Branch); err != nil {
			return fmt.Errorf("delete branch %s: %w", w.Branch, err)
		}
	}
	return nil
}

func (g Git) branchExists(ctx context.Context, w Worktree) bool {
	_, err := g.inRepo(ctx, w, "show-ref", "--verify", "--quiet", "refs/heads/"+w.Branch)
	return err == nil
}

// UnmergedError refuses to remove a branch whose commits exist nowhere
// else, or a worktree whose HEAD holds commits that are on no branch.
type UnmergedError struct {
	Branch  string
	Commits []string
	// Head is where the worktree's HEAD is when the commits are at it,
	// on no branch ("a detached HEAD at abc123"); Path is the worktree.
	Head, Path string
}

func (e *UnmergedError) Error() string {
	if e.Head != "" {
		return fmt.Sprintf("the worktree %s is on %s, which holds %d commit(s) on no branch: %s; keep them on a branch (git -C %s switch -c NAME) or pass --force to delete them",
			e.Path, e.Head, len(e.Commits), firstFive(e.Commits), e.Path)
	}
	return fmt.Sprintf("branch %s holds %d commit(s) that no other branch has: %s; merge them (git merge %s) or pass --force to delete them",
		e.Branch, len(e.Commits), firstFive(e.Commits), e.Branch)
}

// UncommittedError refuses to remove a worktree with uncommitted changes.
type UncommittedError struct {
	Path    string
	Changes []string
}

func (e *UncommittedError) Error() string {
	return fmt.Sprintf("worktree %s has %d uncommitted change(s): %s; commit them, or pass --force to delete them",
		e.Path, len(e.Changes), firstFive(e.Changes))
}

// firstFive joins up to five items and counts the rest, so a refusal
// stays one readable line.
func firstFive(items []string) string {
	if len(items) <= 5 {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:5], "; "), len(items)-5)
}

// InitSubmodules checks out the submodules of the worktree at path, which
// git worktree add leaves empty; a worktree without .gitmodules is left
// alone. git fetches what the main repository does not hold from the
// submodule's URL, under the user's own git settings.
func (g Git) InitSubmodules(ctx context.Context, path string) error {
	if _, err := os.Lstat(filepath.Join(path, ".gitmodules")); err != nil {
		return nil
	}
	if _, err := g.run(ctx, path, "submodule", "update", "--init", "--recursive", "--quiet"); err != nil {
		return fmt.Errorf("submodules of %s are not checked out (run git submodule update --init there): %w", path, err)
	}
	return nil
}

// lockRepo serializes the worktree changes facets makes in one repository:
// git worktree add writes the repository's worktree list without a lock of
// its own, and two at once can fail ("failed to read .../commondir"), or a
// prune can drop the entry another add is making. The lock file lives
// beside the worktrees, never inside the repository.
func lockRepo(w Worktree) (func(), error) {
	sum := sha256.Sum256([]byte(w.CommonDir))
	dir := filepath.Dir(w.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock repository %s: %w", w.Repo, err)
	}
	path := filepath.Join(dir, ".repo-"+hex.EncodeToString(sum[:6])+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock repository %s: %w", w.Repo, err)
	}
	err = safefile.LockExclusive(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock repository %s: %w", w.Repo, err)
	}
	// The file stays: removing it would let a waiter lock a dead inode.
	return func() { f.Close() }, nil
}

package worktree_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/facets-dev/facets/runtime/worktree"
)

// bigRepo makes a repository of n committed files in 100 directories, with
// an ignored .env listed in the worktree-include file, as a project that
// uses the feature has.
func bigRepo(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "repo")
	for i := range n {
		write(b, filepath.Join(dir, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.go", i)), fmt.Sprintf("package d\n\nconst C%d = %d\n", i, i))
	}
	write(b, filepath.Join(dir, ".gitignore"), ".env\n")
	write(b, filepath.Join(dir, ".env"), "KEY=1\n")
	write(b, filepath.Join(dir, worktree.IncludeFile), ".env\n")
	git(b, dir, "init", "--quiet", "-b", "main")
	git(b, dir, "add", ".")
	git(b, dir, "commit", "--quiet", "-m", "many files")
	return dir
}

// BenchmarkWorktreeCost is what a worktree profile adds to a delegate,
// against its floor, git worktree add alone, timed alternately in one run
// on a 10,000-file repository (docs/performance.md cites it). Removing the
// worktrees is not timed.
func BenchmarkWorktreeCost(b *testing.B) {
	isolateGit(b)
	ctx := context.Background()
	var g worktree.Git
	repo := bigRepo(b, 10000)
	root := b.TempDir()
	var floor, full []time.Duration
	n := 0
	for b.Loop() {
		n++
		b.StopTimer()
		path := filepath.Join(root, fmt.Sprintf("plain-%d", n))
		start := time.Now()
		git(b, repo, "worktree", "add", "--quiet", "-b", fmt.Sprintf("plain/%d", n), path, "HEAD")
		floor = append(floor, time.Since(start))
		git(b, repo, "worktree", "remove", "--force", path)
		b.StartTimer()

		start = time.Now()
		r, err := g.Find(ctx, repo)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := g.Dirty(ctx, r); err != nil {
			b.Fatal(err)
		}
		branch := worktree.BranchName("writer", fmt.Sprintf("%08d", n))
		g.BranchExists(ctx, r, branch)
		w, err := g.Create(ctx, r, filepath.Join(root, fmt.Sprintf("sub-%d", n)), branch)
		if err != nil {
			b.Fatal(err)
		}
		if c, err := g.CopyIncluded(ctx, r, w.Path); err != nil || len(c.Files) != 1 {
			b.Fatalf("copied %v, %v", c.Files, err)
		}
		if err := g.InitSubmodules(ctx, w.Path); err != nil {
			b.Fatal(err)
		}
		full = append(full, time.Since(start))
		b.StopTimer()
		if err := g.Remove(ctx, w, true); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(float64(median(floor).Microseconds())/1000, "git-add-ms")
	b.ReportMetric(float64(median(full).Microseconds())/1000, "facets-ms")
	b.ReportMetric(float64(median(full))/float64(median(floor)), "ratio")
}

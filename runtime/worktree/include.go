package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// IncludeFile is where a repository lists, in gitignore syntax, the
// git-ignored files (.env, local config) a Sub's worktree gets a copy of.
const IncludeFile = ".pi/facets/worktree-include"

// Copied is what CopyIncluded did.
type Copied struct {
	// Files are the paths copied, relative to the work tree top.
	Files []string
	// Skipped are paths not copied, each with why.
	Skipped []string
}

// CopyIncluded copies into dst the files of r's work tree that are both
// ignored by git and matched by r's IncludeFile; tracked files are in the
// worktree already. Matching is git's own (ls-files). A path through a
// symbolic link, or that is not a regular file, is skipped, so nothing
// outside the repository is ever read or written.
func (g Git) CopyIncluded(ctx context.Context, r Repo, dst string) (Copied, error) {
	var c Copied
	include := filepath.Join(r.Top, IncludeFile)
	fi, err := os.Lstat(include)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", include, err)
	}
	if !fi.Mode().IsRegular() {
		return c, fmt.Errorf("%s is not a regular file (a symbolic link or another kind of file is not read)", include)
	}
	listed, err := g.run(ctx, r.Top, "ls-files", "-z", "--others", "--ignored", "--exclude-from="+include)
	if err != nil {
		return c, fmt.Errorf("worktree include: %w", err)
	}
	if len(listed) == 0 {
		return c, nil
	}
	ignored, err := g.run(ctx, r.Top, "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
	if err != nil {
		return c, fmt.Errorf("worktree include: %w", err)
	}
	isIgnored := map[string]bool{}
	for _, p := range bytes.Split(ignored, []byte{0}) {
		isIgnored[string(p)] = true
	}
	for _, p := range bytes.Split(listed, []byte{0}) {
		rel := string(p)
		if rel == "" {
			continue
		}
		if !isIgnored[rel] {
			c.Skipped = append(c.Skipped, rel+": not ignored by git (untracked files are not copied)")
			continue
		}
		if err := copyInside(r.Top, dst, rel); err != nil {
			c.Skipped = append(c.Skipped, rel+": "+err.Error())
			continue
		}
		c.Files = append(c.Files, rel)
	}
	return c, nil
}

// copyInside copies root/rel to dst/rel when no component of either path is
// a symbolic link and the source is a regular file; it never replaces a
// file that exists in dst.
func copyInside(root, dst, rel string) error {
	if filepath.IsAbs(rel) || rel != filepath.Clean(rel) || strings.HasPrefix(rel, "..") {
		return errors.New("not a plain relative path")
	}
	if err := noLinks(root, rel, false); err != nil {
		return err
	}
	if err := noLinks(dst, filepath.Dir(rel), true); err != nil {
		return err
	}
	in, err := os.OpenFile(filepath.Join(root, rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	out, err := os.OpenFile(filepath.Join(dst, rel), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// noLinks checks each directory on the way from base to base/rel (and
// rel itself unless dirOnly is false and it is the file to copy) for
// symbolic links; with create it makes missing directories.
func noLinks(base, rel string, create bool) error {
	if rel == "." {
		return nil
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := base
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if create && errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(cur, 0o755); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return errors.New("a symbolic link is on its path")
		}
		if (create || i < len(parts)-1) && !fi.IsDir() {
			return errors.New("a path component is not a directory")
		}
	}
	return nil
}

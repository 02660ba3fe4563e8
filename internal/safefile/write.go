package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Which writes follow links. A folder a repository controls (a project's
// .pi, a Git work tree) is the repository's to
// control: facets writes there with WriteFileIn, CreateIn and MkdirIn,
// which follow no symlink and open no special file; so do the files facets
// generates wherever they go (the profile schema, the Pi extension), which
// are replaced, never written through. A path the user names is written by
// WriteNamed: inside a Git work tree as WriteFileIn, elsewhere (compile
// --out ~/..., /dev/stdout) as WriteFileAtomic, which follows a link so
// that dotfile managers keep working and writes a device or FIFO directly;
// so are facets' own private runtime dirs (Sub records, herdr state).

// WriteFileAtomic writes b to path with mode perm through a temporary file
// in the same directory, fsyncs it, renames it into place and fsyncs the
// directory, so readers never see a partial file, even after a crash.
// A symlink is followed, so the link stays and its target is replaced; a
// path that is not a regular file (/dev/null, /dev/stdout, a FIFO) is
// written to directly, because renaming over it would replace the device.
func WriteFileAtomic(path string, b []byte, perm os.FileMode) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return fmt.Errorf("write %s: is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return WriteClose(f, path, b)
	}
	return replace(path, b, perm)
}

// WriteFileIn is WriteFileAtomic for a path inside root, a folder a
// repository controls: it follows no symlink below root (a linked
// directory is refused; a link at path itself is replaced by the new file,
// its target untouched) and refuses, without opening it, a path that is
// not a regular file, so a FIFO never blocks it. Missing directories
// below root are created with mode 0755; root itself may be a link.
func WriteFileIn(root, path string, b []byte, perm os.FileMode) error {
	if err := MkdirIn(root, filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("write %s: %w", path, err)
	case fi.Mode()&fs.ModeSymlink != 0, fi.Mode().IsRegular():
		// rename(2) replaces the link or file itself.
	default:
		return fmt.Errorf("write %s: %w; remove it first", path, notRegular(fi.Mode()))
	}
	return replace(path, b, perm)
}

// MkdirIn creates dir and its missing parents with mode 0755 like
// os.MkdirAll, for a dir inside root: an existing component below root
// that is a symlink or not a directory is refused, so the writes that
// follow stay inside root. A dir outside root is an error.
func MkdirIn(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not inside %s", dir, root)
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if fi, err = os.Lstat(cur); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink; facets follows no link inside %s", cur, root)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", cur)
		}
	}
	return nil
}

// CreateIn creates a new file at path inside root with b as its content,
// failing if anything, a symlink included, exists there; directories are
// made as MkdirIn makes them.
func CreateIn(root, path string, b []byte, perm os.FileMode) error {
	if err := MkdirIn(root, filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; not overwriting it", path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return WriteClose(f, path, b)
}

// WriteNamed writes b to a path the user named (compile --out). A path in
// a Git work tree (an ancestor of it holds .git) is the repository's to
// control, so it is written as WriteFileIn writes it below that work
// tree; any other path as WriteFileAtomic writes it, following links and
// writing devices such as /dev/stdout. Either way missing directories of
// path are created.
func WriteNamed(path string, b []byte, perm os.FileMode) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	for dir := filepath.Dir(abs); ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return WriteFileIn(dir, abs, b, perm)
		}
		up := filepath.Dir(dir)
		if up == dir {
			// Missing directories are made, as WriteFileIn makes them.
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
			return WriteFileAtomic(path, b, perm)
		}
		dir = up
	}
}

// replace writes b to a temporary file beside path and renames it over
// path, which rename(2) replaces without following a link.
func replace(path string, b []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(b)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(name, perm)
	}
	if werr == nil {
		werr = os.Rename(name, path)
	}
	if werr != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteClose writes b to f, which is open at path, and closes it; the error,
// if any, is the first of the two, naming path.
func WriteClose(f *os.File, path string, b []byte) error {
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

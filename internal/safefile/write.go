package safefile

import (
	"fmt"
	"os"
	"path/filepath"
)

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

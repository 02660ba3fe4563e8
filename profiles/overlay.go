package profiles

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/facets-dev/facets/internal/safefile"
)

// Overlay maps absolute, clean file paths to contents that stand in for the
// files there: an editor's unsaved buffers, so that the editor shows what
// check will report once they are saved. Discovery still lists directories
// on disk, plus the overlay's files that would be listed once saved (a new
// legacy profile, config.json or role file); reading a file consults the
// overlay, under the same size cap, and a path that is a FIFO, device or
// directory on disk is refused as before, whatever the overlay holds. A
// nil Overlay reads disk.
type Overlay map[string][]byte

// ReadFile returns the overlay's content for path, or else the file on
// disk as safefile.ReadFile reads it, with the same errors.
func (o Overlay) ReadFile(path string, limit int64) ([]byte, error) {
	b, ok := o[path]
	if !ok {
		return safefile.ReadFile(path, limit)
	}
	// A special file on disk is refused as check refuses it; a missing
	// one is a buffer not saved yet.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return safefile.ReadFile(path, limit)
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &safefile.TooLargeError{Size: int64(len(b)), Limit: limit}}
	}
	return b, nil
}

// unlisted returns, sorted, the overlay's paths in dir whose name matches
// keep: files an editor has open but not yet saved, which a directory
// listing cannot show.
func (o Overlay) unlisted(dir string, keep func(rel string) bool) []string {
	var out []string
	for p := range o {
		if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") && keep(filepath.ToSlash(rel)) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// has reports whether path has overlay content.
func (o Overlay) has(path string) bool {
	_, ok := o[path]
	return ok
}

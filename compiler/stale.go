package compiler

import (
	"fmt"

	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/manifest"
)

// SnapshotWarning (shown by the Pi bridge) checks the frozen manifest m read from path against its
// sources with Verify, under the snapshot's own trust decision
// (opts.TrustFlag is ignored), and returns the one line a Main shows at
// startup when it is stale, or "" when it is current. The run still uses
// the snapshot: that is what frozen means.
func SnapshotWarning(m *manifest.Manifest, path string, opts Options) string {
	schema, err := cue.Load()
	if err != nil {
		return fmt.Sprintf("Cannot check whether Facets snapshot %s is current: %v", path, err)
	}
	opts.TrustFlag = nil
	ds, err := Verify(schema, m, path, opts)
	if err != nil {
		return fmt.Sprintf("Cannot check whether Facets snapshot %s is current: %v", path, err)
	}
	return staleLine(path, ds)
}

func staleLine(path string, ds []Diagnostic) string {
	if len(ds) == 0 {
		return ""
	}
	first := ds[0].Message
	if ds[0].File != "" {
		first = ds[0].File + ": " + first
	}
	more := ""
	if len(ds) > 1 {
		more = fmt.Sprintf(" and %d more", len(ds)-1)
	}
	return fmt.Sprintf("Facets snapshot %s is stale (%s%s); still using it. Run `facets verify %s` for details, or recompile.", path, first, more, path)
}

package compiler

import (
	"fmt"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/safefile"
)

// StartupSnapshot reads the frozen manifest a Main starts from (pi
// --profile with FACETS_MANIFEST) and checks it against its sources with
// OpenSnapshot, under the snapshot's own trust decision (opts.TrustFlag and
// opts.PiTrust are ignored). warning is the one line the Main shows when the snapshot is
// stale, or "" when it is current; the run still uses the snapshot: that
// is what frozen means. An unreadable or invalid manifest is an error.
func StartupSnapshot(path string, opts Options) (m *manifest.Manifest, warning string, err error) {
	schema, err := cue.Load()
	if err != nil {
		return nil, "", err
	}
	data, err := safefile.ReadFile(path, manifest.MaxBytes)
	if err != nil {
		return nil, "", fmt.Errorf("read manifest: %w", err)
	}
	opts.TrustFlag, opts.PiTrust = nil, nil
	m, ds, err := OpenSnapshot(schema, path, data, opts)
	if err != nil {
		return nil, "", err
	}
	return m, staleLine(path, ds), nil
}

// UncheckedLine is the startup warning for a snapshot that could not be
// compared with its sources.
func UncheckedLine(path string, err error) string {
	return fmt.Sprintf("Cannot check whether Facets snapshot %s is current: %v", path, err)
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

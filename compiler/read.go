package compiler

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/safefile"
)

// ReadManifest reads a manifest written by facets compile, checking it
// against the #Manifest schema first, so a stale or hand-edited file is
// reported with its positions instead of launching a wrong snapshot.
func ReadManifest(schema *cue.Schema, path string) (*manifest.Manifest, error) {
	data, err := safefile.ReadFile(path, manifest.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return ParseManifest(schema, path, data)
}

// ParseManifest is ReadManifest for a manifest already read from path. A
// manifest that breaks #Manifest in several places is refused with every
// finding, so one edit fixes them all.
func ParseManifest(schema *cue.Schema, path string, data []byte) (*manifest.Manifest, error) {
	if res := schema.ValidateJSON(cue.Manifest, path, data); !res.OK() {
		lines := make([]string, 0, len(res.Findings))
		for _, f := range res.Findings {
			lines = append(lines, fmt.Sprintf("%s:%d:%d: %s", f.File, f.Line, f.Column, f.Message))
		}
		return nil, fmt.Errorf("read manifest %s", strings.Join(lines, "; "))
	}
	var m manifest.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", path, err)
	}
	if m.Version != manifest.Version {
		return nil, fmt.Errorf("read manifest %s: version %d, want %d", path, m.Version, manifest.Version)
	}
	return &m, nil
}

// LoadManifest reads a frozen manifest with a freshly loaded schema; see
// ReadManifest.
func LoadManifest(path string) (*manifest.Manifest, error) {
	schema, err := cue.Load()
	if err != nil {
		return nil, err
	}
	return ReadManifest(schema, path)
}

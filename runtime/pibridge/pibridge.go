// Package pibridge ships the thin Pi extension that connects a running Pi to
// the facets binary, and the Go side of that bridge: the startup plan (what
// the extension applies to Pi) and the delivery server (channel deliveries,
// receipts and talk for one Pi process).
//
// The TypeScript half only maps Pi's extension API onto `facets` commands;
// every decision about profiles, prompt sections and the channel protocol is
// made here, in Go, so it is covered by Go tests and shared with the CLI.
package pibridge

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/facets-dev/facets/internal/safefile"
)

//go:generate bash extension/build.sh

// extensionSource is index.js, TypeScript's output for extension/index.ts
// (extension/build.sh; TestExtensionJSIsCurrent keeps it current).
//
//go:embed extension/index.js
var extensionSource []byte

// ExtensionFile is the file name of the extension entry point. It is
// JavaScript, which Pi imports natively; a .ts entry point would go
// through jiti's TypeScript transform at every start.
const ExtensionFile = "index.js"

// PackageFile declares index.js an ES module and Pi's entry point of the
// directory. Pi reads it before looking for index.ts or index.js, so the
// LegacyFile beside it is never what Pi discovers.
const PackageFile = "package.json"

const packageSource = `{"type": "module", "pi": {"extensions": ["./index.js"]}}` + "\n"

// LegacyFile is where installs before index.js put the extension. It now
// re-exports index.js, so a Main Pi still running an old extension, and
// anything else that names index.ts (pi -e, $FACETS_PI_BRIDGE), loads the
// current one.
const LegacyFile = "index.ts"

const legacySource = "// facets bridge for Pi: the extension is index.js beside this file; this\n" +
	"// file keeps the path installs before it used working.\n" +
	"export { default } from \"./index.js\";\n"

// ConfigFile sits beside the extension and tells it which facets binary to
// run, so a Sub launched with `--no-extensions -e <bridge>` finds the same
// binary as the Main without relying on PATH.
const ConfigFile = "facets-bridge.json"

// Config is the content of ConfigFile.
type Config struct {
	// FacetsBin is the absolute path of the facets binary the extension runs;
	// empty means "facets" from PATH. $FACETS_BIN overrides it at run time.
	FacetsBin string `json:"facetsBin,omitempty"`
	// FacetsVersion is the build version of the facets that wrote the
	// extension; the extension names it in the handshake, so a mismatch
	// message can say which facets installed it.
	FacetsVersion string `json:"facetsVersion,omitempty"`
}

// DefaultDir returns the directory Pi auto-discovers the extension from:
// <agentDir>/extensions/facets. agentDir is Pi's agent dir as the command
// resolved it (profiles.AgentDir), so nothing here reads the environment.
func DefaultDir(agentDir string) string {
	return filepath.Join(agentDir, "extensions", "facets")
}

// RecordedBinary is the path of this binary (exe and exeErr, as
// os.Executable returns them, symlinks resolved) that Write records for the
// extension. A `go run` binary lives in a build cache directory that is
// deleted afterwards: for it the path is empty (the extension runs
// "facets" from PATH) and warning says so.
func RecordedBinary(exe string, exeErr error) (path, warning string, err error) {
	if exeErr == nil {
		exe, exeErr = filepath.EvalSymlinks(exe)
	}
	if exeErr != nil {
		return "", "", fmt.Errorf("locate the facets binary: %w", exeErr)
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "", exe + ` is a temporary go run binary; the extension will run "facets" from PATH`, nil
	}
	return exe, "", nil
}

// Write installs the extension into dir (created with mode 0755 if
// missing): its ConfigFile, index.js, the LegacyFile and the PackageFile,
// in that order, so that Pi never discovers an entry point before the files
// it reads. It returns the absolute path of index.js, which is what
// `pi -e` and FACETS_PI_BRIDGE take. Files are replaced atomically so a Pi
// starting concurrently never loads half a file, and replaced, never
// written through: a link at any of them is replaced and a special file
// refused (safefile.WriteFileIn below dir).
func Write(dir string, cfg Config) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("install pi extension: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("install pi extension: %w", err)
	}
	conf, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", fmt.Errorf("install pi extension: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{ConfigFile, append(conf, '\n')},
		{ExtensionFile, extensionSource},
		{LegacyFile, []byte(legacySource)},
		{PackageFile, []byte(packageSource)},
	} {
		if err := safefile.WriteFileIn(abs, filepath.Join(abs, f.name), f.data, 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(abs, ExtensionFile), nil
}

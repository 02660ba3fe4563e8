// Package runtimeenv builds what the runtime commands (delegate, invoke,
// talk, interrupt, close, list) act through from their flags and the
// user's environment: the Sub runtime with its default directories and
// surface, and the launch snapshot (a frozen manifest or a fresh compile).
// The commands only bind flags, call these and print.
package runtimeenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/herdr"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/profiles"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/subs"
	"github.com/facets-dev/facets/runtime/surface"
	"github.com/facets-dev/facets/runtime/tmux"
)

// Env is the part of the process a runtime command reads: its environment
// (one variable, and the whole list the surface's processes get) and the
// user's home directory.
type Env struct {
	Getenv  func(string) string
	Environ []string
	Home    string
}

// Dirs are the runtime commands' directory and surface flags; an empty
// field takes its default.
type Dirs struct {
	StateDir   string // runs and bindings (default <agent dir>/facets/state)
	RuntimeDir string // channel root (default channel.RuntimeRoot)
	AgentDir   string // Pi's agent dir (default profiles.AgentDir)
	HerdrBin   string // the herdr executable (default herdr.BinaryPath)
	// Surface is where new Subs open: "herdr" or "tmux" (default
	// $FACETS_SURFACE, else Herdr inside Herdr, tmux inside tmux).
	Surface string
}

// ErrNoSurface is why no Sub can open outside Herdr and tmux.
var ErrNoSurface = errors.New("Subs open in Herdr or tmux, and this Main runs in neither: start Pi inside a Herdr pane (https://herdr.dev) or inside tmux (tmux new -s work, then pi), or set " + envvar.Surface + "=herdr|tmux.")

// surfaceName is the surface new Subs open in ("" for none).
func (d Dirs) surfaceName(getenv func(string) string) (string, error) {
	name := d.Surface
	if name == "" {
		name = getenv(envvar.Surface)
	}
	switch {
	case name == "herdr" || name == "tmux":
		return name, nil
	case name != "":
		return "", &SettingError{fmt.Errorf("unknown surface %q (want herdr or tmux)", name)}
	case getenv(envvar.HerdrEnv) != "":
		return "herdr", nil
	case getenv(envvar.Tmux) != "":
		return "tmux", nil
	}
	return "", nil
}

// SettingError is a setting the user gave that cannot be used (an agent
// dir that cannot be found, a bridge that is not a file, a frozen manifest
// that does not load): the command was called wrongly, not the runtime.
type SettingError struct{ Err error }

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Runtime is the Sub runtime d and env describe, launching Subs with the
// Pi extension at bridge (empty for operations that launch nothing).
func (d Dirs) Runtime(bridge string, env Env) (*subs.Runtime, error) {
	agentDir, err := profiles.AgentDir(d.AgentDir, env.Getenv, env.Home)
	if err != nil {
		return nil, &SettingError{err}
	}
	state := d.StateDir
	if state == "" {
		state = subs.DefaultStateDir(agentDir)
	}
	root := d.RuntimeDir
	if root == "" {
		root = channel.RuntimeRoot(env.Getenv)
	}
	name, err := d.surfaceName(env.Getenv)
	if err != nil {
		return nil, err
	}
	// Both adapters cost nothing until asked: existing runs are listed and
	// closed through the one that opened them.
	all := map[string]surface.Surface{
		"herdr": herdr.NewCLI(herdr.BinaryPath(d.HerdrBin, env.Getenv), env.Getenv, env.Environ),
		"tmux":  tmux.New("", env.Getenv, env.Environ),
	}
	rt := &subs.Runtime{
		Surfaces:    all,
		Store:       subs.Store{Dir: state},
		ChannelRoot: root,
		Bridge:      bridge,
		AgentDir:    agentDir,
		NoSurface:   ErrNoSurface,
		WorktreeDir: subs.DefaultWorktreeDir(agentDir),
	}
	if name != "" {
		rt.Surface = all[name]
	}
	return rt, nil
}

// Snapshot says where a launch's manifest comes from: a frozen manifest
// (Manifest), else a compile of the Main's sources, and which Pi extension
// the Sub loads (Bridge).
type Snapshot struct {
	Manifest string
	Bridge   string
	Sources  compiler.Sources
}

// Load returns the manifest that holds profile and the absolute path of the
// bridge. A frozen manifest is validated once per content
// (compiler.UserCheckedManifests); a compile that has errors fails with
// their messages.
func (s Snapshot) Load(profile string, env Env) (*manifest.Manifest, string, error) {
	if s.Bridge == "" {
		return nil, "", &SettingError{errors.New("no Pi bridge: pass --bridge or set " + envvar.PiBridge)}
	}
	bridge, err := filepath.Abs(s.Bridge)
	if err != nil {
		return nil, "", &SettingError{err}
	}
	// A Sub started with a missing -e file would come up without Facets and
	// never answer; refuse before anything is launched.
	if fi, err := os.Stat(bridge); err != nil || !fi.Mode().IsRegular() {
		return nil, "", &SettingError{fmt.Errorf("Pi bridge %s is not a file: run facets pi-extension install, then pass --bridge \"$(facets pi-extension --path)\" or set %s to it", s.Bridge, envvar.PiBridge)}
	}
	if s.Manifest != "" {
		m, err := compiler.UserCheckedManifests(env.Getenv).Load(s.Manifest)
		if err != nil {
			return nil, "", &SettingError{err}
		}
		return m, bridge, nil
	}
	opts, err := s.Sources.Options(env.Getenv, env.Home)
	if err != nil {
		return nil, "", err
	}
	opts.Names = []string{profile}
	schema, err := cue.Load()
	if err != nil {
		return nil, "", err
	}
	m, ds, err := compiler.Compile(schema, opts)
	if err != nil {
		return nil, "", err
	}
	if compiler.HasErrors(ds) {
		var msgs []string
		for _, d := range ds {
			if d.Severity == compiler.Error {
				msgs = append(msgs, d.Message)
			}
		}
		return nil, "", fmt.Errorf("profile %s does not compile: %s", profile, strings.Join(msgs, "; "))
	}
	return m, bridge, nil
}

// Package startup answers the Pi extension's startup call, facets
// pi-extension plan: the handshake, then the plan of a Main (its catalog
// from a frozen manifest or a fresh compile, its profile, whether serve
// starts at once) or of a Sub (from its channel). The command only reads
// flags and stdin and prints the plan.
package startup

import (
	"errors"
	"fmt"
	"time"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/cue"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/profiles"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/launch"
	"github.com/facets-dev/facets/runtime/pibridge"
	"github.com/facets-dev/facets/runtime/subs"
)

// Call is one startup call as its flags give it.
type Call struct {
	Role        string // "main" or "sub"
	Profile     string // a Main's --profile
	Manifest    string // a frozen manifest to start from; "" compiles the sources
	MainSession string // a Main's Pi session id
	Sources     compiler.Sources
	// Extension is the calling extension's side of the handshake, Binary
	// this binary's.
	Extension, Binary pibridge.Peer
}

// Plan answers c. read reads the extension's request (PlanRequest) and
// applies it over c; it is called only when the protocols match. getenv and
// home are the caller's environment.
func Plan(c Call, read func(*Call) error, getenv func(string) string, home string) pibridge.Plan {
	var plan pibridge.Plan
	msg := pibridge.Mismatch(c.Extension, c.Binary)
	var reqErr error
	if msg == "" {
		// Only an extension of this protocol sends a request.
		reqErr = read(&c)
	}
	switch {
	case msg != "":
		plan = pibridge.MismatchPlan(c.Role, c.Profile, msg)
	case reqErr != nil:
		plan = pibridge.Plan{Role: c.Role, Error: reqErr.Error()}
	case c.Role == "main":
		plan = mainPlan(c, getenv, home)
	default:
		plan = subPlan(getenv)
	}
	plan.Protocol, plan.Facets = pibridge.Protocol, c.Binary.Version
	return plan
}

// Apply applies the extension's request over the call's flags: each field
// it sets overrides the flag of the same name.
func (c *Call) Apply(req pibridge.PlanRequest) {
	if req.Cwd != "" {
		c.Sources.Cwd = req.Cwd
	}
	if req.Approve != nil {
		c.Sources.Trust, c.Sources.NoTrust = *req.Approve, !*req.Approve
	}
	c.Sources.PiTrust = req.PiTrusted
	c.Sources.RolePacks = append(c.Sources.RolePacks, req.RolePacks...)
	if req.Profile != "" {
		c.Profile = req.Profile
	}
	if req.MainSession != "" {
		c.MainSession = req.MainSession
	}
}

func mainPlan(c Call, getenv func(string) string, home string) pibridge.Plan {
	m, ds, warning, err := mainManifest(c, getenv, home)
	if err != nil {
		return pibridge.Plan{Role: "main", Error: err.Error()}
	}
	plan := pibridge.MainPlan(m, ds, c.Profile)
	plan.DefaultThinking(func(model string) string {
		// A Sub loads the project's settings when it is launched with
		// --approve: when the project is trusted.
		return profiles.DefaultThinkingLevel(profiles.Env{AgentDir: m.AgentDir, Cwd: m.Cwd}, model, m.Trust.Trusted)
	})
	root := channel.RuntimeRoot(getenv)
	plan.Serve = pibridge.HasRuns(root, c.MainSession)
	plan.Warnings = append(plan.Warnings, censusLines(getenv, m.AgentDir, root)...)
	if warning != "" {
		plan.Warnings = append(plan.Warnings, warning)
	}
	return plan
}

// mainManifest is the Main's catalog: the frozen manifest when one is
// given, so later edits to the sources change nothing, with the warning
// the Main shows when it is stale; else a fresh compile.
func mainManifest(c Call, getenv func(string) string, home string) (*manifest.Manifest, []compiler.Diagnostic, string, error) {
	opts, err := c.Sources.Options(getenv, home)
	if c.Manifest == "" {
		if err != nil {
			return nil, nil, "", err
		}
		schema, err := cue.Load()
		if err != nil {
			return nil, nil, "", err
		}
		opts.NoDigests = true // the plan reads no digest
		m, ds, err := compiler.Compile(schema, opts)
		return m, ds, "", err
	}
	if err != nil {
		m, lerr := compiler.LoadManifest(c.Manifest)
		if lerr != nil {
			return nil, nil, "", lerr
		}
		return m, m.Diagnostics, compiler.UncheckedLine(c.Manifest, err), nil
	}
	m, warning, err := compiler.StartupSnapshot(c.Manifest, opts)
	if err != nil {
		return nil, nil, "", err
	}
	return m, m.Diagnostics, warning, nil
}

func subPlan(getenv func(string) string) pibridge.Plan {
	c, err := OpenSubChannel(getenv)
	if err != nil {
		return pibridge.Plan{Role: "sub", Error: err.Error()}
	}
	defer c.Close()
	plan := pibridge.SubPlan(c.Manifest().Profile, c.Manifest().Origin)
	plan.Serve = true
	if plan.Error == "" && c.Manifest().Task != "" {
		plan.Kickoff, plan.Task, plan.SelfStart = launch.KickoffPrompt, c.Manifest().Task, c.Manifest().SelfStart
	}
	return plan
}

// SubChannelEnv reads a Sub's channel and token from its launch
// environment; the token comes from a file so it never sits on a command
// line.
func SubChannelEnv(getenv func(string) string) (dir, token string, err error) {
	dir = getenv(envvar.Channel)
	if dir == "" {
		return "", "", errors.New(envvar.Channel + " is missing in Sub Pi.")
	}
	token, err = channel.ReadToken(getenv(envvar.TokenFile), getenv(envvar.Token))
	switch {
	case errors.Is(err, channel.ErrNoToken):
		return "", "", errors.New(envvar.TokenFile + " is missing in Sub Pi.")
	case err != nil:
		return "", "", fmt.Errorf("Sub capability token: %w", err)
	}
	return dir, token, nil
}

// OpenSubChannel opens the channel of the Sub whose environment getenv reads.
func OpenSubChannel(getenv func(string) string) (*channel.Channel, error) {
	dir, token, err := SubChannelEnv(getenv)
	if err != nil {
		return nil, err
	}
	c, err := channel.Open(dir, token)
	if err != nil {
		return nil, fmt.Errorf("Sub channel: %w", err)
	}
	return c, nil
}

// stateDir is where runs are kept: $FACETS_STATE_DIR, else the default
// under the agent dir.
func stateDir(getenv func(string) string, agentDir string) string {
	if state := getenv(envvar.StateDir); state != "" {
		return state
	}
	return subs.DefaultStateDir(agentDir)
}

// censusLines are the Main's startup lines about the store, each only when
// it has something to say: what crashes left behind, and the worktrees of
// finished Subs that hold work, so none is forgotten. subs.Store.Census
// reads local files only: no surface and no git is asked.
func censusLines(getenv func(string) string, agentDir, root string) []string {
	c := subs.Store{Dir: stateDir(getenv, agentDir)}.Census(root, time.Now())
	var lines []string
	switch c.Leftovers {
	case 0:
	case 1:
		lines = append(lines, "1 Facets leftover; run facets gc")
	default:
		lines = append(lines, fmt.Sprintf("%d Facets leftovers; run facets gc", c.Leftovers))
	}
	if c.KeptWorktrees > 0 {
		lines = append(lines, fmt.Sprintf("%d Facets worktree(s) of finished Subs hold work for review: facets list shows them, facets close --run ID --discard removes one.", c.KeptWorktrees))
	}
	return lines
}

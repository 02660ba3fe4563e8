// Package envvar is the one place that spells the environment variables
// facets reads or sets, so the Go commands, the runtime, the Herdr adapter
// and docs/environment.md cannot drift apart. Each constant says who sets the
// variable and who reads it.
//
// The Pi extension (runtime/pibridge/extension/index.ts) reads or sets four
// of them before it has asked facets for anything, so it spells them
// itself: FacetsBin, Role, PlanDaemon and PlanSocket. Standard variables
// the os and os/exec packages read on their own (PATH) are not listed.
package envvar

// PiPrefix starts the name of every variable of the Main↔Sub contract
// (Role, Channel, TokenFile, Token, MainSession); the fake herdr records
// the ones that reach herdr's own environment.
const PiPrefix = "PI_FACETS_"

// The variables of a Sub Pi's launch environment and of the commands the Pi
// extension runs.
const (
	// Role is "sub" in a Sub Pi. Set by the launch (runtime/launch) as a
	// herdr tab create --env; read by the Pi extension to pick its role.
	Role = "PI_FACETS_ROLE"
	// Channel is the Sub's channel directory. Set by the launch
	// (runtime/launch); read by facets pi-extension plan/serve --role sub and
	// as the default of facets channel --dir.
	Channel = "PI_FACETS_CHANNEL"
	// TokenFile is the path of the 0600 file holding the Sub's capability
	// token. Set by the launch (herdr.Launch); read by facets pi-extension
	// plan/serve --role sub and as the default of facets channel --token-file.
	TokenFile = "PI_FACETS_TOKEN_FILE"
	// Token is a capability token a caller already holds. Never set by
	// facets (herdr passes variables on a command line, so the Herdr adapter
	// refuses it); read by facets channel and the Sub side of the extension
	// helpers when no token file is named.
	Token = "PI_FACETS_TOKEN"
	// MainSession is the Main Pi's session id. Set by the user or the
	// caller of the Sub commands; read as the default of --main-session of
	// facets delegate, invoke, talk, interrupt, close and list.
	MainSession = "PI_FACETS_MAIN_SESSION"
)

// The variables a user or the host package sets to configure facets.
const (
	// Manifest is a frozen manifest from facets compile --out. Set by the
	// user; read as the default of --manifest of facets pi-extension plan,
	// delegate and invoke.
	Manifest = "FACETS_MANIFEST"
	// PiBridge is the absolute path of the Facets Pi extension a Sub is
	// launched with. Set by the user; read as the default of --bridge of
	// facets delegate and invoke.
	PiBridge = "FACETS_PI_BRIDGE"
	// StateDir is where runs and bindings are kept. Set by the user; read as
	// the default of --state-dir of the Sub commands.
	StateDir = "FACETS_STATE_DIR"
	// RolePacks is a list of registered role packs, separated like PATH.
	// Set by the user; read by check, compile, profiles and the commands
	// that compile, before any --role-pack.
	RolePacks = "FACETS_ROLE_PACKS"
	// BundledRoles is the host package's bundled roles directory. Set by
	// the host package; read as the default of --bundled-roles.
	BundledRoles = "FACETS_BUNDLED_ROLES"
	// FacetsBin is the facets binary the Pi extension runs. Set by the user;
	// read by the Pi extension only, ahead of the path recorded at install.
	FacetsBin = "FACETS_BIN"
	// PlanDaemon set to 0 turns the plan daemon off: every Pi start spawns
	// its plan. Set by the user; read by the Pi extension only.
	PlanDaemon = "FACETS_PLAN_DAEMON"
	// PlanSocket is where the plan daemon listens. Set by the Pi extension
	// on the plan it spawns; read by facets pi-extension plan, which starts
	// the daemon there for the next Pi.
	PlanSocket = "FACETS_PLAN_SOCKET"
	// HerdrBin is the herdr executable the Sub commands run. Set by the
	// user; read as the default of --herdr-bin, ahead of HerdrBinPath.
	HerdrBin = "FACETS_HERDR"
	// Update set to 1 makes the tests rewrite their golden files. Set by a
	// developer; read by the test helper internal/golden only.
	Update = "FACETS_UPDATE"
)

// The variables of Pi, Herdr and the system that facets reads.
const (
	// AgentDir is Pi's agent directory. Set by the user for Pi; read by
	// facets (profiles.AgentDir) when no --agent-dir is given.
	AgentDir = "PI_CODING_AGENT_DIR"
	// Home is the user's home directory, for the ~/.pi/agent fallback of
	// AgentDir and for ~ in profile paths. Set by the system; read by the
	// commands.
	Home = "HOME"
	// XDGCacheHome is the base of facets' cache of checked manifests
	// ($XDG_CACHE_HOME/facets, else ~/.cache/facets). Set by the system.
	XDGCacheHome = "XDG_CACHE_HOME"
	// XDGRuntimeDir is the base of the channel root
	// ($XDG_RUNTIME_DIR/pi-facets-<uid>). Set by the system; read by the Sub
	// commands and facets pi-extension serve when no --runtime-dir is given.
	XDGRuntimeDir = "XDG_RUNTIME_DIR"
	// TmpDir is the channel root's base when XDGRuntimeDir is unset
	// ($TMPDIR/pi-facets-<uid>, else /tmp). Set by the system; read where
	// XDGRuntimeDir is, and by the Pi extension for the plan daemon's socket.
	TmpDir = "TMPDIR"
	// HerdrEnv is "1" inside a Herdr pane. Set by Herdr; read by the Herdr
	// adapter (herdr.CLI) before it creates a tab.
	HerdrEnv = "HERDR_ENV"
	// HerdrWorkspaceID is the workspace of the current Herdr pane. Set by
	// Herdr; read by the Herdr adapter, which creates Sub tabs there.
	HerdrWorkspaceID = "HERDR_WORKSPACE_ID"
	// HerdrSocketPath is Herdr's API socket. Set by Herdr for plugin
	// commands; read by facets herdr-visibility.
	HerdrSocketPath = "HERDR_SOCKET_PATH"
	// HerdrPluginStateDir is the plugin's state directory. Set by Herdr for
	// plugin commands; read by facets herdr-visibility.
	HerdrPluginStateDir = "HERDR_PLUGIN_STATE_DIR"
	// HerdrPluginID is the plugin's id. Set by Herdr for plugin commands;
	// read by facets herdr-visibility.
	HerdrPluginID = "HERDR_PLUGIN_ID"
	// HerdrBinPath is the executable of the Herdr server a pane belongs to.
	// Set by Herdr in every pane; read by the Herdr adapter
	// (herdr.BinaryPath) when no --herdr-bin is given.
	HerdrBinPath = "HERDR_BIN_PATH"
	// HerdrSession is the named Herdr session of a pane. Set by Herdr; read
	// by the Herdr adapter, which records it in each run to confirm
	// ownership of a tab later.
	HerdrSession = "HERDR_SESSION"
	// Tmux is "<socket>,<server pid>,<session index>" inside a tmux pane.
	// Set by tmux; read by the surface choice (internal/runtimeenv) and the
	// tmux adapter, which opens Sub windows on that server.
	Tmux = "TMUX"
	// TmuxPane is the pane id (%N) inside tmux. Set by tmux; read by the
	// tmux adapter, whose Sub windows open in that pane's session.
	TmuxPane = "TMUX_PANE"
	// Surface chooses where Subs open: "herdr" or "tmux". Set by the user;
	// read by the runtime commands (--surface overrides it). Unset: Herdr
	// inside Herdr ($HERDR_ENV), else tmux inside tmux ($TMUX).
	Surface = "FACETS_SURFACE"
	// GitHubWorkspace is the checkout directory of a GitHub Actions job.
	// Set by GitHub Actions; read by --format github (check, compile,
	// verify), whose file= paths GitHub resolves against it.
	GitHubWorkspace = "GITHUB_WORKSPACE"
)

// Plan is every variable a startup plan (facets pi-extension plan) reads,
// Main or Sub: the Pi extension sends the plan daemon these and nothing
// else of its environment (API keys stay in Pi), and the daemon keeps only
// these of a request. The extension spells the same list as PLAN_ENV; a
// test in internal/startup keeps the plan's reads equal to this list and
// that one equal to it.
var Plan = []string{AgentDir, Home, XDGRuntimeDir, TmpDir, Manifest, RolePacks, BundledRoles, Channel, TokenFile, Token, StateDir}

// PlanPaths are the variables of Plan whose relative value a plan process
// resolves against its own working directory (and may print as given): the
// daemon, which has no such directory, leaves a plan with one of them to a
// process.
var PlanPaths = []string{AgentDir, Home, XDGRuntimeDir, TmpDir, Manifest, Channel, TokenFile, StateDir}

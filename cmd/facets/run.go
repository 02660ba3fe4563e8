package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/runtimeenv"
	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/runtime/launch"
	"github.com/facets-dev/facets/runtime/subs"
)

// runFlags are the flags shared by the Sub commands: which Main they act
// for, where runs and channels live, and how results are printed.
type runFlags struct {
	mainSession string
	dirs        runtimeenv.Dirs
	format      string
	app         *app
}

func (f *runFlags) register(a *app, cmd *cobra.Command) {
	f.app = a
	fl := cmd.Flags()
	fl.StringVar(&f.mainSession, "main-session", a.getenv(envvar.MainSession), "Main Pi session id (default $"+envvar.MainSession+")")
	fl.StringVar(&f.dirs.StateDir, "state-dir", a.getenv(envvar.StateDir), "where runs and bindings are kept (default $"+envvar.StateDir+" or <agent-dir>/facets/state)")
	fl.StringVar(&f.dirs.RuntimeDir, "runtime-dir", "", "channel root (default $XDG_RUNTIME_DIR/pi-facets-<uid>)")
	fl.StringVar(&f.dirs.AgentDir, "agent-dir", "", "Pi agent dir (default $PI_CODING_AGENT_DIR or ~/.pi/agent)")
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	completeValues(cmd, "format", "text", "json")
	fl.StringVar(&f.dirs.Surface, "surface", "", "where new Subs open: herdr or tmux (default $"+envvar.Surface+", else Herdr inside Herdr, tmux inside tmux)")
	completeValues(cmd, "surface", "herdr", "tmux")
	fl.StringVar(&f.dirs.HerdrBin, "herdr-bin", a.getenv(envvar.HerdrBin), "the herdr executable (default $"+envvar.HerdrBin+", else $"+envvar.HerdrBinPath+", which Herdr sets in its panes, else herdr on PATH)")
}

func (f *runFlags) validate() error {
	if f.format != "text" && f.format != "json" {
		return usageError{fmt.Errorf("unknown --format %q (want text or json)", f.format)}
	}
	return nil
}

// errNoMainSession names both ways to say which Main a command acts for.
var errNoMainSession = errors.New("Facets is not attached to an active Main session: pass --main-session ID or set $" + envvar.MainSession + " (the Pi extension sets it for the commands it runs)")

// requireMain fails like any refused operation when no Main session is
// known, before the runtime is asked.
func (f *runFlags) requireMain(a *app) error {
	if f.mainSession == "" {
		return f.failure(a, errNoMainSession)
	}
	return nil
}

// runtime builds the runtime the flags describe (runtimeenv.Dirs.Runtime).
func (f *runFlags) runtime(bridge string) (*subs.Runtime, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	rt, err := f.dirs.Runtime(bridge, f.app.runtimeEnv())
	return rt, settingError(err)
}

// settingError makes a runtimeenv.SettingError, or a compiler.SourceError,
// the usage error it is.
func settingError(err error) error {
	var se *runtimeenv.SettingError
	var src *compiler.SourceError
	if errors.As(err, &se) || errors.As(err, &src) {
		return usageError{err}
	}
	return err
}

// textResult is what a Main's operation returns: its details, and its text.
type textResult interface{ Text() string }

// newMainOpCmd completes cmd (Use, Short and Long set) as a command that runs
// op on this Main's Subs: it builds the runtime, refuses without a Main
// session, then prints op's result or failure in the chosen format.
func newMainOpCmd(a *app, cmd *cobra.Command, op func(cmd *cobra.Command, rt *subs.Runtime, mainSession string) (textResult, error)) *cobra.Command {
	return newOpCmd(a, cmd, func() bool { return true }, op)
}

// newOpCmd is newMainOpCmd for a command that needs a Main session only
// when needsMain says so after its flags are parsed.
func newOpCmd(a *app, cmd *cobra.Command, needsMain func() bool, op func(cmd *cobra.Command, rt *subs.Runtime, mainSession string) (textResult, error)) *cobra.Command {
	var rf runFlags
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		rt, err := rf.runtime("")
		if err != nil {
			return err
		}
		if needsMain() {
			if err := rf.requireMain(a); err != nil {
				return err
			}
		}
		r, err := op(cmd, rt, rf.mainSession)
		if err != nil {
			return rf.failure(a, err)
		}
		return rf.result(a, r.Text(), r)
	}
	rf.register(a, cmd)
	return cmd
}

// runIDFlag adds the required --run flag of the commands that act on one Sub.
func runIDFlag(cmd *cobra.Command, runID *string) {
	cmd.Flags().StringVar(runID, "run", "", "run id or unique prefix (required)")
	cmd.MarkFlagRequired("run")
}

// result prints a successful operation: its text, or {"ok":true,"text":…}
// merged with the operation's details.
func (f *runFlags) result(a *app, text string, details any) error {
	if f.format == "text" {
		_, err := fmt.Fprintln(a.stdout, text)
		return err
	}
	fields := map[string]any{}
	if details != nil {
		data, err := json.Marshal(details)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &fields); err != nil {
			return err
		}
	}
	fields["ok"] = true
	fields["text"] = text
	return writeJSONValue(a.stdout, fields)
}

// failure reports a refused or failed operation and exits 1; with --format
// json it prints {"ok":false,"error":…[,"runId":…]} on stdout so the Pi
// bridge can show the message and offer a close retry.
func (f *runFlags) failure(a *app, err error) error {
	var ue usageError
	if errors.As(err, &ue) {
		return err
	}
	if f.format == "json" {
		out := map[string]any{"ok": false, "error": err.Error()}
		var retained *subs.RetainedRunError
		if errors.As(err, &retained) {
			out["runId"] = retained.RunID
		}
		if werr := writeJSONValue(a.stdout, out); werr != nil {
			return werr
		}
	} else {
		fmt.Fprintf(a.stderr, "facets: %s\n", termesc.Escape(err.Error()))
	}
	return errDiagnostics
}

func writeJSONValue(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// launch loads the profile's manifest and the runtime, runs op under a
// signal-cancelled context and prints its result; delegate and invoke share it.
func (f *runFlags) launch(a *app, cmd *cobra.Command, mf *manifestFlags, profile string,
	op func(context.Context, *subs.Runtime, *manifest.Manifest) (string, any, error)) error {
	m, bridge, err := mf.load(f, profile)
	if err != nil {
		return f.failure(a, err)
	}
	rt, err := f.runtime(bridge)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(cmd)
	defer stop()
	text, details, err := op(ctx, rt, m)
	if err != nil {
		return f.failure(a, err)
	}
	return f.result(a, text, details)
}

// signalContext cancels on SIGINT/SIGTERM so an interrupted launch still
// rolls its tab back and an interrupted channel watch closes its watcher.
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// manifestFlags say where the launch snapshot comes from
// (runtimeenv.Snapshot): a compiled manifest file, or an in-process compile
// of the Main's sources.
type manifestFlags struct {
	snap runtimeenv.Snapshot
}

func (f *manifestFlags) register(a *app, cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.snap.Manifest, "manifest", a.getenv(envvar.Manifest), "frozen manifest from facets compile --out (default $"+envvar.Manifest+"; if unset, compile the sources now)")
	fl.StringVar(&f.snap.Bridge, "bridge", a.getenv(envvar.PiBridge), "absolute path of the Facets Pi bridge extension (default $"+envvar.PiBridge+")")
	// The compile flags of sourceFlags, except that the Main's cwd is
	// --main-cwd: --cwd is the Sub's working directory here.
	src := &f.snap.Sources
	fl.StringVar(&src.Cwd, "main-cwd", ".", "working directory of the Main Pi (when compiling)")
	fl.BoolVar(&src.Trust, "trust", false, "treat the project as trusted, overriding Pi's trust settings (when compiling)")
	fl.BoolVar(&src.NoTrust, "no-trust", false, "treat the project as untrusted, overriding Pi's trust settings (when compiling)")
	fl.StringArrayVar(&src.RolePacks, "role-pack", nil, "role pack path (when compiling); repeatable")
	fl.StringVar(&src.BundledRoles, "bundled-roles", "", "bundled roles directory (when compiling)")
	cmd.MarkFlagsMutuallyExclusive("trust", "no-trust")
	cmd.MarkFlagsMutuallyExclusive("manifest", "trust")
	cmd.MarkFlagsMutuallyExclusive("manifest", "no-trust")
}

// load returns the manifest and the absolute bridge path; a compile sees
// the runtime's --agent-dir.
func (f *manifestFlags) load(run *runFlags, profile string) (*manifest.Manifest, string, error) {
	f.snap.Sources.AgentDir = run.dirs.AgentDir
	defer lazyGC(false)()
	m, bridge, err := f.snap.Load(profile, run.app.runtimeEnv())
	return m, bridge, settingError(err)
}

// toolSourceHelp documents --tool-source for delegate and invoke.
const toolSourceHelp = `where the Main's tool NAME comes from, so the Sub loads the extension owning it; repeatable.
Either NAME=PATH (PATH is Pi's sourceInfo.path; builtin:… and <builtin:…> paths are built-ins)
or a JSON object {"name":NAME,"path":PATH,"source":SOURCE} carrying Pi's sourceInfo verbatim
(source "builtin", "sdk", a package source, …). Once given, every non-MCP profile tool must be listed`

// toolSources is the repeatable --tool-source flag: the Main Pi's tool
// provenance by tool name, handed to the runtime unchanged.
type toolSources map[string]launch.ToolSource

func (ts *toolSources) String() string { return "" }
func (ts *toolSources) Type() string   { return "NAME=PATH|JSON" }

// Set parses one value with launch.ParseToolSource; a tool may be named once.
func (ts *toolSources) Set(v string) error {
	name, src, err := launch.ParseToolSource(v)
	if err != nil {
		return err
	}
	if _, dup := (*ts)[name]; dup {
		return fmt.Errorf("tool %s has more than one --tool-source", name)
	}
	if *ts == nil {
		*ts = toolSources{}
	}
	(*ts)[name] = src
	return nil
}

func newDelegateCmd(a *app) *cobra.Command {
	return newLaunchCmd(a, false)
}

func newInvokeCmd(a *app) *cobra.Command {
	return newLaunchCmd(a, true)
}

// newLaunchCmd builds delegate (the Main's model launching a Sub) or, with
// invoke, the user's /sub:<profile>: both take a profile, a task and the
// Main's tool sources, and run under one subs.DelegateRequest; delegate
// alone chooses title, cwd and a session to resume.
func newLaunchCmd(a *app, invoke bool) *cobra.Command {
	var rf runFlags
	var mf manifestFlags
	var req subs.DelegateRequest
	var sources toolSources
	cmd := &cobra.Command{
		Use:   "delegate --profile P --title T --task TEXT",
		Short: "Launch a Sub for an agent-invokable profile in a Herdr tab, or resume a persistent one",
		Long: `delegate launches a Sub Pi for an agent-invokable profile in a new Herdr tab
and submits its task; with --resume it reopens a closed persistent Sub
session (exact id or unique prefix) instead. A Main may have at most four
open Subs. If the launch fails and its tab cannot be rolled back, the run is
kept and its id printed so "facets close --run ID" can retry.

--format json prints {"ok":true,"text","action","runId","title","profile",
"adapter","tools","skills","sessionPersistence","sessionId"?,"tabId",
"paneId"} or {"ok":false,"error","runId"?} (exit 1).`,
		Args: cobra.NoArgs,
	}
	if invoke {
		cmd.Use = "invoke --profile P [--task TEXT]"
		cmd.Short = "Run a user profile command (/sub:<profile>): reuse, resume or create the Main's bound Sub"
		cmd.Long = `invoke is what /sub:<profile> does. The Main session and profile are bound to
one Sub: while it is open the task is queued to it, a closed persistent
session is resumed, otherwise a new Sub is created and bound. A binding
that cannot be verified is an error, never a silent replacement.

--format json prints the delegate shape with "action" created, resumed or
queued (plus "messageId" when queued); "text" is the notification line
"<action>: <profile> · <run8>[ · session <id>]".`
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := rf.validate(); err != nil {
			return err
		}
		switch {
		case invoke && req.Profile == "":
			return usageError{errors.New("invoke needs --profile")}
		case !invoke && (req.Profile == "" || req.Task == ""):
			return usageError{errors.New("delegate needs --profile and --task")}
		}
		if err := rf.requireMain(a); err != nil {
			return err
		}
		return rf.launch(a, cmd, &mf, req.Profile, func(ctx context.Context, rt *subs.Runtime, m *manifest.Manifest) (string, any, error) {
			req.Manifest, req.MainSessionID, req.ToolSources = m, rf.mainSession, sources
			if invoke {
				d, err := rt.Invoke(ctx, req)
				return subs.InvocationText(d), d, err
			}
			d, err := rt.Delegate(ctx, req)
			return d.Text(), d, err
		})
	}
	rf.register(a, cmd)
	mf.register(a, cmd)
	fl := cmd.Flags()
	if invoke {
		fl.StringVar(&req.Profile, "profile", "", "profile to invoke (required)")
		fl.StringVar(&req.Task, "task", "", "the user's request (default: the profile's own task)")
	} else {
		fl.StringVar(&req.Profile, "profile", "", "profile to launch (required)")
		fl.StringVar(&req.Title, "title", "", "short title for the Sub's tab (at most 48 characters are shown)")
		fl.StringVar(&req.Task, "task", "", "the Sub's task, its first user message (required; at most 1 MiB, never on herdr's command line)")
		fl.StringVar(&req.Cwd, "cwd", "", "the Sub's working directory, relative to the Main's (ignored on --resume)")
		fl.StringVar(&req.ResumeSessionID, "resume", "", "closed persistent Sub session to resume (id or unique prefix)")
	}
	fl.Var(&sources, "tool-source", toolSourceHelp)
	return cmd
}

func newTalkCmd(a *app) *cobra.Command {
	var runID, message string
	cmd := newMainOpCmd(a, &cobra.Command{
		Use:   "talk --run RUNID [--message TEXT]",
		Short: "Queue one message (from --message or stdin) for an open Sub",
		Long: `talk queues one message for an open Sub of this Main (run id or unique
prefix). Queuing is not acceptance; the Sub acknowledges it later.

--format json prints {"ok":true,"text","runId","title","messageId","sequence"}.`,
	}, func(cmd *cobra.Command, rt *subs.Runtime, mainSession string) (textResult, error) {
		if !cmd.Flags().Changed("message") {
			var err error
			if message, err = a.stdinMessage(); err != nil {
				return nil, usageError{err}
			}
		}
		return rt.Talk(mainSession, runID, message)
	})
	runIDFlag(cmd, &runID)
	cmd.Flags().StringVar(&message, "message", "", "the message (default: read stdin)")
	return cmd
}

func newInterruptCmd(a *app) *cobra.Command {
	var runID string
	cmd := newMainOpCmd(a, &cobra.Command{
		Use:   "interrupt --run RUNID",
		Short: "Ask an open Sub to stop its current turn, keeping its session and tab",
		Long: `interrupt names the Sub's current turn; the Sub ignores the request once
that turn is over, so a late interrupt cannot cancel later work.

--format json prints {"ok":true,"text","runId","title","turnId"}.`,
	}, func(_ *cobra.Command, rt *subs.Runtime, mainSession string) (textResult, error) {
		return rt.Interrupt(mainSession, runID)
	})
	runIDFlag(cmd, &runID)
	return cmd
}

func newCloseCmd(a *app) *cobra.Command {
	var req subs.CloseRequest
	cmd := newOpCmd(a, &cobra.Command{
		Use:   "close --run RUNID [--reason R] [--discard [--force]]",
		Short: "Close a Sub: request close, close its tab, release its slot; --discard removes its kept worktree",
		Long: `close writes close.json, closes the Sub's tab and checks the result.
If the surface fails, the run and its channel are kept and close can be retried;
this also releases a run kept after a failed launch rollback. Undelivered
Sub messages keep the channel ("retained") without holding a slot.

A Sub of a "workspace": "worktree" profile has its own git worktree: close
removes it with its branch when it holds no commits and no changes, and
otherwise keeps it and reports the branch, the commits ahead of the base,
the changed files and any uncommitted changes.

--discard also removes a kept worktree and its branch (of any Main's
closed run; then no Main session is needed). It refuses uncommitted
changes and commits that no other branch or tag holds, naming them;
--force removes them anyway.

--format json prints {"ok":true,"text","runId","title","retained",
"worktree"?:{"branch","path","base","state"?,"removed"?,"summary"},
"discarded"?:{"runId","branch","path"}}.`,
	}, func() bool { return !req.Discard }, func(cmd *cobra.Command, rt *subs.Runtime, mainSession string) (textResult, error) {
		ctx, stop := signalContext(cmd)
		defer stop()
		req.MainSessionID = mainSession
		return rt.CloseRun(ctx, req)
	})
	runIDFlag(cmd, &req.Ref)
	cmd.Flags().StringVar(&req.Reason, "reason", "", "reason recorded in close.json (default: "+subs.DefaultCloseReason+")")
	cmd.Flags().BoolVar(&req.Discard, "discard", false, "also remove the run's kept worktree and its branch")
	cmd.Flags().BoolVar(&req.Force, "force", false, "with --discard: remove uncommitted changes and unmerged commits too")
	return cmd
}

func newListCmd(a *app) *cobra.Command {
	var all bool
	cmd := newMainOpCmd(a, &cobra.Command{
		Use:   "list [--all]",
		Short: "List this Main's Subs with Herdr's live status, and resumable sessions",
		Long: `list shows open Subs that are persistent or not idle (working, blocked,
submitted: prompted but not started yet, queued: a message is waiting,
gone: Herdr no longer has its pane), and closed persistent sessions that
can be resumed; --all adds idle and unknown ephemeral Subs. Status is
unknown when Herdr cannot report it.

--format json prints {"ok":true,"text","open":[{"runId","subSessionId"?,
"title","profile","sessionPersistence","origin"?,"purpose"?,"status",
"adapter","elapsedSeconds","launchError"?}],"resumable":[{"sessionId",
"sessionFile"?,"title","cwd","modifiedAt","modifiedSecondsAgo","origin"?,
"profileName"?,"purpose"?,"worktree"?}],"worktrees":[{"runId","mainSessionId",
"title","profile","closedAt","worktree":{"branch","path","base","state"?,
"summary"}}]}; an open Sub of a worktree profile has "worktree" too.

Kept worktrees (closed runs whose worktree holds commits or changes) are
listed for every Main, so none is forgotten; close --run ID --discard
removes one.`,
	}, func(cmd *cobra.Command, rt *subs.Runtime, mainSession string) (textResult, error) {
		return rt.List(cmd.Context(), mainSession, all)
	})
	cmd.Flags().BoolVar(&all, "all", false, "also list idle and unknown ephemeral Subs")
	return cmd
}

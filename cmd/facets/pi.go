package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/startup"
	"github.com/facets-dev/facets/profiles"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/pibridge"
)

func newPiExtensionCmd(a *app) *cobra.Command {
	var dir, agentDir string
	var showPath bool
	cmd := &cobra.Command{
		Use:   "pi-extension [--path] [--dir D]",
		Short: "Print where the facets Pi extension is installed, or install it",
		Long: `pi-extension manages the thin Pi extension that bridges Pi to this binary.
It is embedded in facets; "install" writes it (index.js, compiled from the
TypeScript source; facets-bridge.json, which records this binary's path; a
package.json naming index.js; and an index.ts that re-exports it, for paths
from older installs) so no separate package is needed.

The default directory is <agentDir>/extensions/facets, which Pi discovers on
its own. A Sub is launched with --no-extensions -e <path>, where <path> is
what --path prints: the extension passes itself to facets delegate and
facets invoke as --bridge; by hand, pass --bridge or set ` + envvar.PiBridge + `.

The extension runs hidden helpers of this command: "plan" (what to apply
at startup, as JSON), "serve" (channel deliveries and receipts over JSON
lines on stdin/stdout, for the life of the Pi process) and "daemon" (which
answers later starts' plans over a Unix socket, so they spawn no process;
` + envvar.PlanDaemon + `=0 turns it off).`,
		Example: `  facets pi-extension install
  facets pi-extension --path
  pi --profile reviewer`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !showPath {
				return cmd.Help()
			}
			d, err := extensionDir(a, dir, agentDir)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, filepath.Join(d, pibridge.ExtensionFile))
			return err
		},
	}
	cmd.Flags().BoolVar(&showPath, "path", false, "print the path of the extension entry point (installed or not)")
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "extension directory (default <agentDir>/extensions/facets)")
	cmd.PersistentFlags().StringVar(&agentDir, "agent-dir", "", "Pi agent dir (default $PI_CODING_AGENT_DIR or ~/.pi/agent)")

	install := &cobra.Command{
		Use:   "install [--dir D]",
		Short: "Write the extension and print the path of its entry point",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := extensionDir(a, dir, agentDir)
			if err != nil {
				return err
			}
			bin, warning, err := pibridge.RecordedBinary(os.Executable())
			if err != nil {
				return err
			}
			if warning != "" {
				fmt.Fprintf(a.stderr, "facets: %s\n", warning)
			}
			path, err := pibridge.Write(d, pibridge.Config{FacetsBin: bin, FacetsVersion: facetsVersion()})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, path)
			return err
		},
	}
	cmd.AddCommand(install, newPiPlanCmd(a), newPiServeCmd(a), newPiDaemonCmd(a))
	return cmd
}

func extensionDir(a *app, dir, agentDir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	// Resolved here so the agent dir comes from the app's environment.
	resolved, err := profiles.AgentDir(agentDir, a.getenv, a.home())
	if err != nil {
		return "", fmt.Errorf("locate Pi agent dir: %w", err)
	}
	return pibridge.DefaultDir(resolved), nil
}

// newPiPlanCmd is the extension's startup call; it always prints a plan so
// the extension can show the error inside Pi.
func newPiPlanCmd(a *app) *cobra.Command {
	var src sourceFlags
	var role, profile, manifest, extVersion, mainSession string
	var protocol int
	cmd := &cobra.Command{
		Use:    "plan --role main|sub [--profile NAME] [--protocol N --extension-version V] [< request.json]",
		Short:  "Print the startup plan the Pi extension applies (JSON)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin := thisBinary()
			if role != "main" && role != "sub" {
				return usageError{fmt.Errorf("unknown --role %q (want main or sub)", role)}
			}
			call := startup.Call{Role: role, Profile: profile, Manifest: manifest, MainSession: mainSession, Sources: src.sources(),
				Extension: pibridge.Peer{Protocol: protocol, Version: extVersion}, Binary: bin}
			defer lazyGC(false)()
			plan := startup.Plan(call, startup.RequestFrom(a.stdin), a.getenv, a.home())
			if err := startup.EncodePlan(a.stdout, plan); err != nil {
				return err
			}
			// A plan the extension spawned starts the daemon that answers
			// the next Pi's (best effort: without it, that Pi spawns again).
			if sock := a.getenv(envvar.PlanSocket); sock != "" && bin.Path != "" {
				_ = pibridge.StartDaemon(bin.Path, sock)
			}
			return nil
		},
	}
	src.register(a, cmd)
	cmd.Flags().StringVar(&role, "role", "main", "main or sub")
	cmd.Flags().StringVar(&profile, "profile", "", "startup profile of a Main (pi --profile)")
	cmd.Flags().StringVar(&manifest, "manifest", a.getenv(envvar.Manifest), "frozen manifest from facets compile --out (default $"+envvar.Manifest+"; if unset, compile the sources now)")
	handshakeFlags(cmd, &protocol)
	cmd.Flags().StringVar(&mainSession, "main-session", "", "Pi session id of the Main (role main): whether it has runs to serve")
	cmd.Flags().StringVar(&extVersion, "extension-version", "", "build version of the facets that installed the extension (the handshake)")
	return cmd
}

// handshakeFlags registers --protocol: the extension's pibridge.Protocol.
// An extension from before the handshake passes none, which is protocol 1.
func handshakeFlags(cmd *cobra.Command, protocol *int) {
	cmd.Flags().IntVar(protocol, "protocol", 1, "protocol of the calling Pi extension (the handshake)")
}

// self is this binary's side of the handshake.
func thisBinary() pibridge.Peer {
	bin, err := os.Executable()
	if err != nil {
		bin = ""
	}
	return pibridge.Peer{Protocol: pibridge.Protocol, Version: facetsVersion(), Path: bin}
}

// newPiDaemonCmd serves the extension's plan calls over a Unix socket
// (pibridge.RunDaemon), each answered as this command would answer it in a
// process of its own (startup.Answer).
func newPiDaemonCmd(a *app) *cobra.Command {
	var socket string
	var idle time.Duration
	cmd := &cobra.Command{
		Use:    "daemon --socket PATH [--idle D]",
		Short:  "Answer the Pi extension's startup plans over a Unix socket",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !filepath.IsAbs(socket) {
				return usageError{fmt.Errorf("--socket %q: want an absolute path", socket)}
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("plan daemon: locate this binary: %w", err)
			}
			bin := thisBinary()
			err = pibridge.RunDaemon(cmd.Context(), pibridge.DaemonOptions{
				Socket: socket, Executable: exe, Idle: idle, Poll: time.Second,
				Run: func(r pibridge.DaemonRequest) (pibridge.DaemonReply, error) { return startup.Answer(r, bin) }})
			if errors.Is(err, pibridge.ErrDaemonRunning) {
				return nil
			}
			return err
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "the socket to listen on")
	cmd.Flags().DurationVar(&idle, "idle", 15*time.Minute, "exit after this long without a request")
	return cmd
}

// newPiServeCmd is the extension's long-lived helper; it speaks JSON lines
// on stdin/stdout and exits when stdin closes (i.e. when Pi exits).
func newPiServeCmd(a *app) *cobra.Command {
	var role, mainSession string
	var protocol int
	cmd := &cobra.Command{
		Use:    "serve --role main|sub [--main-session ID] [--protocol N]",
		Short:  "Run the delivery server of one Pi process (JSON lines on stdin/stdout)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if protocol != pibridge.Protocol {
				// The plan has told this extension why Facets is off.
				return pibridge.Drain(a.stdin)
			}
			opts := pibridge.ServeOptions{Role: role, Root: channel.RuntimeRoot(a.getenv), MainSession: mainSession}
			if role == "sub" {
				dir, token, err := startup.SubChannelEnv(a.getenv)
				if err != nil {
					return err
				}
				opts.ChannelDir, opts.Token = dir, token
			}
			return pibridge.Serve(cmd.Context(), a.stdin, a.stdout, opts)
		},
	}
	cmd.Flags().StringVar(&role, "role", "main", "main or sub")
	cmd.Flags().StringVar(&mainSession, "main-session", "", "Pi session id of the Main (role main)")
	handshakeFlags(cmd, &protocol)
	return cmd
}

// facetsVersion is this binary's build version, for the handshake.
func facetsVersion() string { return buildVersion(version, debug.ReadBuildInfo) }

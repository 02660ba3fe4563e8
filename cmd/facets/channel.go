package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/termesc"
	"github.com/facets-dev/facets/runtime/channel"
)

func newChannelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "channel",
		Short: "Send, receive, watch and inspect a Main↔Sub file channel",
		Long: `channel gives scripts and the Pi bridge access to a run's private file
channel. The channel directory defaults to ` + envvar.Channel + ` and the token
file to ` + envvar.TokenFile + `, the variables a Sub is launched with. The
capability token itself is never taken from the command line, where other
users could read it; it comes from the 0600 token file (or, for callers that
already hold it, the ` + envvar.Token + ` variable).

Exit status: 0 ok, 1 protocol problems found (corrupt or foreign files),
2 usage, 3 I/O failure.`,
	}
	cmd.AddCommand(newChannelSendCmd(a), newChannelRecvCmd(a), newChannelWatchCmd(a), newChannelInspectCmd(a))
	return cmd
}

type channelFlags struct {
	dir, tokenFile, direction string
	getenv                    func(string) string
}

func (f *channelFlags) register(a *app, cmd *cobra.Command) {
	f.getenv = a.getenv
	cmd.Flags().StringVar(&f.dir, "dir", a.getenv(envvar.Channel), "channel directory (default $"+envvar.Channel+")")
	cmd.Flags().StringVar(&f.tokenFile, "token-file", a.getenv(envvar.TokenFile), "file holding the capability token (default $"+envvar.TokenFile+")")
	cmd.Flags().StringVar(&f.direction, "direction", "", "inbox: to-main or to-sub (required)")
}

func (f *channelFlags) open() (*channel.Channel, channel.Direction, error) {
	if f.dir == "" {
		return nil, "", usageError{errors.New("no channel: pass --dir or set " + envvar.Channel)}
	}
	token, err := f.token()
	if err != nil {
		return nil, "", err
	}
	d, err := channel.ParseDirection(f.direction)
	if err != nil {
		return nil, "", usageError{err}
	}
	c, err := channel.Open(f.dir, token)
	return c, d, err
}

// token reads the capability token from --token-file, falling back to
// $PI_FACETS_TOKEN.
func (f *channelFlags) token() (string, error) {
	t, err := channel.ReadToken(f.tokenFile, f.getenv(envvar.Token))
	if errors.Is(err, channel.ErrNoToken) {
		return "", usageError{errors.New("no token: pass --token-file or set " + envvar.TokenFile)}
	}
	return t, err
}

func newChannelSendCmd(a *app) *cobra.Command {
	var f channelFlags
	var text string
	cmd := &cobra.Command{
		Use:   "send --direction DIR [--text TEXT]",
		Short: "Queue one message (from --text or stdin) and print its id and sequence",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, d, err := f.open()
			if err != nil {
				return err
			}
			defer c.Close()
			if !cmd.Flags().Changed("text") {
				if text, err = a.stdinMessage(); err != nil {
					return err
				}
			}
			m, err := c.Send(d, text)
			if err != nil {
				return err
			}
			return json.NewEncoder(a.stdout).Encode(map[string]any{"direction": m.Direction, "messageId": m.ID, "sequence": m.Sequence})
		},
	}
	f.register(a, cmd)
	cmd.Flags().StringVar(&text, "text", "", "message text (default: read stdin)")
	return cmd
}

// stdinMessage reads the message of send or talk from stdin when no flag
// gives it. One byte past the limit is read so that Send refuses an
// oversized message instead of sending it cut short.
func (a *app) stdinMessage() (string, error) {
	data, err := io.ReadAll(io.LimitReader(a.stdin, channel.MaxMessageBytes+1))
	if err != nil {
		return "", fmt.Errorf("read message from stdin: %w", err)
	}
	return string(data), nil
}

type receiveFlags struct {
	channelFlags
	receipts string
}

func (f *receiveFlags) register(a *app, cmd *cobra.Command) {
	f.channelFlags.register(a, cmd)
	cmd.Flags().StringVar(&f.receipts, "receipts", "", "receipt log to record deliveries in (default: in memory)")
}

// openWithStore opens the channel and the receipt store a receiving
// command needs; done releases both.
func (f *receiveFlags) openWithStore() (*channel.Channel, channel.Direction, channel.ReceiptStore, func(), error) {
	c, d, err := f.open()
	if err != nil {
		return nil, "", nil, nil, err
	}
	store, closeStore, err := channel.OpenReceipts(f.receipts)
	if err != nil {
		c.Close()
		return nil, "", nil, nil, err
	}
	return c, d, store, func() { closeStore(); c.Close() }, nil
}

func newChannelRecvCmd(a *app) *cobra.Command {
	var f receiveFlags
	cmd := &cobra.Command{
		Use:   "recv --direction DIR [--receipts FILE]",
		Short: "Print pending messages as JSON lines and remove them from the inbox",
		Long: `recv prints each pending message once as a JSON line, records its receipt
and removes it from the inbox. With --receipts the receipt log persists, so a
later recv or watch with the same log never prints the message again; a crash
between printing and recording may print it once more (at least once).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, d, store, done, err := f.openWithStore()
			if err != nil {
				return err
			}
			defer done()
			p := channel.NewPrinter(a.stdout, a.stderr, store, 0, nil)
			channel.NewReceiver(d, store, p.Submit, p.Report).Scan(c)
			return diagnosed(p.Problems() > 0)
		},
	}
	f.register(a, cmd)
	return cmd
}

func newChannelWatchCmd(a *app) *cobra.Command {
	var f receiveFlags
	var count int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "watch --direction DIR [--receipts FILE] [--count N] [--timeout D]",
		Short: "Print one JSON line per delivery until interrupted, --count or --timeout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 0 || timeout < 0 {
				return usageError{errors.New("--count and --timeout must not be negative")}
			}
			c, d, store, done, err := f.openWithStore()
			if err != nil {
				return err
			}
			defer done()
			ctx, stop := signalContext(cmd)
			defer stop()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			p := channel.NewPrinter(a.stdout, a.stderr, store, count, cancel)
			return channel.Follow(ctx, c, channel.NewReceiver(d, store, p.Submit, p.Report), func(err error) {
				fmt.Fprintf(a.stderr, "facets: %s\n", termesc.Escape(err.Error()))
			})
		},
	}
	f.register(a, cmd)
	cmd.Flags().IntVar(&count, "count", 0, "exit after this many deliveries (0: no limit)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "exit after this long (0: no limit)")
	return cmd
}

func newChannelInspectCmd(a *app) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "inspect [--dir DIR]",
		Short: "Print a channel's state as JSON, including files it would refuse",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usageError{errors.New("no channel: pass --dir or set " + envvar.Channel)}
			}
			r, err := channel.Inspect(dir)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(a.stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(r); err != nil {
				return err
			}
			return diagnosed(len(r.Problems) > 0)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", a.getenv(envvar.Channel), "channel directory (default $"+envvar.Channel+")")
	return cmd
}

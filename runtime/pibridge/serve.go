package pibridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/internal/safefile"
	"github.com/facets-dev/facets/runtime/channel"
)

// ServeOptions selects the side a Serve loop works for.
type ServeOptions struct {
	// Role is "main" or "sub".
	Role string
	// Main: run channels are the directories below Root/Safe(MainSession).
	Root        string
	MainSession string
	// Sub: the channel of this Sub and its capability token.
	ChannelDir string
	Token      string
	// Discover is how often a Main looks for new or removed run channels
	// (default 1s); the channel watcher's own rescan still applies.
	Discover time.Duration
}

// request is one JSON line from the extension.
type request struct {
	Op        string `json:"op"`
	ID        int64  `json:"id,omitempty"`
	Text      string `json:"text,omitempty"`
	Aborted   bool   `json:"aborted,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	File      string `json:"sessionFile,omitempty"`
	// File is the Pi session file ("session"); a Main without one is
	// ephemeral (pi --no-session).
	// Closed names a run a runtime command has just closed (scan only).
	Closed string `json:"closed,omitempty"`
}

// event is one JSON line to the extension.
type event struct {
	Type      string `json:"type"`
	ID        int64  `json:"id,omitempty"`
	RunID     string `json:"runId,omitempty"`
	MessageID string `json:"messageId,omitempty"`
	Text      string `json:"text,omitempty"`
	Error     string `json:"error,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// server is the state of one Serve loop.
type server struct {
	opts     ServeOptions
	dir      channel.Direction // the inbox this side receives from
	receipts *channel.MemoryReceipts
	rx       *channel.Receiver
	w        *channel.Watcher
	sub      *channel.Channel // a Sub's own channel; nil in a Main

	outMu sync.Mutex
	out   *json.Encoder

	mu       sync.Mutex
	ready    bool
	chans    map[string]*channel.Channel // by run id
	turnID   string
	closing  bool
	reported map[string]bool // problems already reported once
	// releaseMain releases the Main's presence lock (holdMain); nil
	// until the extension has said which session the Main runs.
	releaseMain func()
}

// holdMain takes the Main's presence lock, once, with what the extension
// said of its session: facets gc reads a free lock of an ephemeral Main
// as a Main whose runs no one will ever receive.
func (s *server) holdMain(lease channel.MainLease) {
	s.mu.Lock()
	held := s.releaseMain != nil
	s.mu.Unlock()
	if held {
		return
	}
	release, err := channel.HoldMainPresence(s.opts.Root, s.opts.MainSession, lease)
	if err != nil {
		s.problem(err.Error())
		return
	}
	s.mu.Lock()
	s.releaseMain = release
	s.mu.Unlock()
}

// Serve runs the delivery server of one Pi process: it reads JSON-line
// requests from in and writes JSON-line events to out until in is closed
// or ctx ends. Channel messages become "delivery" events carrying the exact
// user-message text (header included); a message leaves its inbox only after
// the extension reports, with a "receipt" request, that Pi recorded that
// text. It returns nil when in reaches EOF.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts ServeOptions) error {
	s := &server{opts: opts, receipts: channel.NewMemoryReceipts(), out: json.NewEncoder(out),
		chans: map[string]*channel.Channel{}, reported: map[string]bool{}}
	s.out.SetEscapeHTML(false)
	var presenceErr error
	switch opts.Role {
	case "main":
		s.dir = channel.ToMain
		if opts.Root == "" || opts.MainSession == "" {
			return errors.New("serve main: runtime root and main session are required")
		}
	case "sub":
		s.dir = channel.ToSub
		c, err := channel.Open(opts.ChannelDir, opts.Token)
		if err != nil {
			return fmt.Errorf("serve sub: %w", err)
		}
		s.sub = c
		s.chans[c.Manifest().RunID] = c
		// Held for the process's life: facets gc and the slot count read
		// a free lock as a Sub that is gone.
		release, err := c.HoldPresence()
		if err != nil {
			presenceErr = err
		} else {
			defer release()
		}
	default:
		return fmt.Errorf("serve: unknown role %q (want main or sub)", opts.Role)
	}
	defer s.closeChannels()
	defer func() {
		s.mu.Lock()
		if s.releaseMain != nil {
			s.releaseMain()
		}
		s.mu.Unlock()
	}()
	s.rx = channel.NewReceiver(s.dir, s.receipts, s.submit, s.receiverProblem)
	w, err := channel.NewWatcher(s.dir, s.scan, channel.WatchOptions{Report: func(err error) { s.problem(err.Error()) }, ScanMoved: s.scanMoved})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.w = w
	defer w.Close()
	if presenceErr != nil {
		s.problem(presenceErr.Error())
	}
	if s.sub != nil {
		// The runtime removes a Sub's channel only once its run is closed,
		// so for a Sub the removal is its close, whenever it comes.
		w.Closing(s.sub)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Role == "main" {
		go s.discoverLoop(ctx)
	}
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 4*channel.MaxMessageBytes)
		for sc.Scan() {
			select {
			case lines <- append([]byte(nil), sc.Bytes()...):
			case <-ctx.Done():
				return
			}
		}
		errc <- sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if err != nil {
				return fmt.Errorf("serve: read requests: %w", err)
			}
			return nil
		case line := <-lines:
			var req request
			if err := json.Unmarshal(line, &req); err != nil {
				s.problem("bad bridge request: " + err.Error())
				continue
			}
			s.handle(req)
		}
	}
}

func (s *server) emit(e event) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_ = s.out.Encode(e)
}

func (s *server) problem(msg string) {
	s.mu.Lock()
	seen := s.reported[msg]
	s.reported[msg] = true
	s.mu.Unlock()
	if !seen {
		s.emit(event{Type: "problem", Error: msg})
	}
}

// receiverProblem reports what the receiver could not read, except a
// directory or file that is gone (ErrRemoved, or "no such file or
// directory"): a scan that raced with the runtime removing a closed run's
// channel, which deletes the inbox before the channel directory, or with an
// acknowledgement, found the end of that run or message, not a problem. An
// inbox missing from a channel that stays is still reported, by the
// watcher, which cannot watch it.
func (s *server) receiverProblem(p channel.Problem) {
	if errors.Is(p, channel.ErrRemoved) || errors.Is(p, fs.ErrNotExist) {
		return
	}
	s.problem(p.Error())
}

func (s *server) handle(req request) {
	switch req.Op {
	case "receipt":
		r, _, err := channel.ParseDeliveryHeader(req.Text)
		if err != nil || r.Direction != s.dir {
			return // not one of ours: a user may quote a header
		}
		if err := s.receipts.Record(r); err != nil {
			// The message is in the conversation: offering it again would
			// duplicate it, so it stays in flight and the failure is said.
			s.problem(fmt.Sprintf("cannot record the receipt of message %s: %v", r.MessageID, err))
		}
		if c := s.channel(r.RunID); c != nil && s.isReady() {
			s.w.Add(c) // wakes the channel so the inbox file goes now
		}
	case "release":
		// Pi refused the submission; let the next scan offer it again.
		if r, _, err := channel.ParseDeliveryHeader(req.Text); err == nil {
			s.rx.Release(r)
		}
	case "inflight":
		// Handed to Pi by a previous bridge instance (before /reload) and
		// still queued there: do not offer it again.
		if r, _, err := channel.ParseDeliveryHeader(req.Text); err == nil && r.Direction == s.dir {
			s.rx.Restore([]channel.Receipt{r})
		}
	case "ready":
		s.mu.Lock()
		s.ready = true
		s.mu.Unlock()
		s.wakeAll()
	case "settled":
		// Pi is idle with nothing queued, and the extension has released
		// (one "release" each) what Pi dropped, e.g. a follow-up withdrawn
		// with its run: offer those again. Only the extension knows what it
		// handed to Pi; a delivery this server offered after the extension
		// settled is still on its way there, so nothing is released here.
		if !req.Aborted {
			s.wakeAll()
		}
	case "send":
		s.send(req)
	case "turn-start":
		s.turn(true)
	case "turn-end":
		s.turn(false)
	case "session":
		if c := s.sub; c != nil && req.SessionID != "" {
			if err := c.WriteSession(req.SessionID, req.File); err != nil {
				s.problem(err.Error())
			}
		}
		if s.sub == nil {
			s.holdMain(channel.MainLease{SessionFile: req.File, Ephemeral: req.File == ""})
		}
	case "quit":
		// A Sub closed by its user (not by close_sub) tells the Main so.
		if c := s.sub; c != nil {
			if _, asked, _ := c.CloseRequest(); !asked && !s.isClosing() {
				if err := c.MarkClosed("The Sub session was closed manually."); err != nil {
					s.problem(err.Error())
				}
			}
		}
	case "sync":
		// A barrier: every channel is scanned once after this request, so
		// whatever was written before it has been acted on when the answer
		// comes (used by tests that check that nothing happened).
		s.wakeAll()
		s.w.Flush()
		s.emit(event{Type: "result", ID: req.ID})
	case "scan":
		// The runtime removes a closed run's channel at once when nothing is
		// left to deliver: tell the watcher before the wake reaches it.
		if c := s.channel(req.Closed); req.Closed != "" && c != nil {
			s.w.Closing(c)
		}
		s.wakeAll()
	default:
		s.problem(fmt.Sprintf("unknown bridge request %q", req.Op))
	}
}

func (s *server) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

func (s *server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *server) channel(runID string) *channel.Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chans[runID]
}

func (s *server) wakeAll() {
	s.mu.Lock()
	var cs []*channel.Channel
	if s.ready {
		cs = slices.Collect(maps.Values(s.chans))
	}
	s.mu.Unlock()
	for _, c := range cs {
		s.w.Add(c)
	}
}

// send queues a Sub→Main talk message and answers with its id.
func (s *server) send(req request) {
	c := s.sub
	if c == nil {
		s.emit(event{Type: "result", ID: req.ID, Error: "talk to the Main is only available in a Sub"})
		return
	}
	m, err := c.Send(channel.ToMain, req.Text)
	if err != nil {
		s.emit(event{Type: "result", ID: req.ID, Error: err.Error()})
		return
	}
	s.emit(event{Type: "result", ID: req.ID, RunID: m.RunID, MessageID: m.ID, Text: SubTalkQueued})
}

// turn records the Sub's active turn so an interrupt can target exactly it.
func (s *server) turn(start bool) {
	c := s.sub
	if c == nil {
		return
	}
	var err error
	s.mu.Lock()
	if start {
		s.turnID = channel.NewID()
		err = c.SetActiveTurn(s.turnID)
	} else if s.turnID != "" {
		err = c.ClearActiveTurn(s.turnID)
		s.turnID = ""
	}
	s.mu.Unlock()
	if err != nil {
		s.problem(err.Error())
	}
}

// scan runs on the watcher goroutine for each channel that needs a look.
func (s *server) scan(c *channel.Channel) { s.scanMoved(c, nil) }

// scanMoved is scan for a wake by the message files names moved into the
// inbox (nil: any other wake), which the receiver may deliver without
// listing the inbox (channel.Receiver.ScanMoved).
func (s *server) scanMoved(c *channel.Channel, names []string) {
	// The runtime removes a closed run's channel once its messages are
	// delivered; that is the normal end of a run, not a problem to report.
	// A Main's discovery drops it from the set. A Sub takes it as its close:
	// close.json may have gone with the directory before this scan read it.
	if _, err := os.Stat(c.Dir()); errors.Is(err, os.ErrNotExist) {
		s.w.Closing(c)
		if s.opts.Role == "sub" {
			s.closeSub("")
		}
		return
	}
	if s.opts.Role == "sub" {
		s.subControls(c)
	} else if _, closed, err := c.Closed(); err == nil && closed {
		s.w.Closing(c)
	}
	s.rx.ScanMoved(c, names) // with no names, a full Scan
}

// closeSub asks the Sub's Pi, once, to end its session.
func (s *server) closeSub(reason string) {
	s.mu.Lock()
	first := !s.closing
	s.closing = true
	s.mu.Unlock()
	if first {
		s.emit(event{Type: "close", Reason: reason})
	}
}

func (s *server) subControls(c *channel.Channel) {
	if cl, ok, err := c.CloseRequest(); err == nil && ok {
		s.w.Closing(c)
		s.closeSub(cl.Reason)
		return
	}
	t, ok, err := c.Interrupt()
	if err != nil || !ok {
		return
	}
	_ = c.ConsumeInterrupt()
	s.mu.Lock()
	match := s.turnID != "" && t.TurnID == s.turnID
	s.mu.Unlock()
	if match {
		s.emit(event{Type: "interrupt"})
	}
}

// submit hands one delivery to the extension; Pi records it as a user
// message and the extension sends its text back as a receipt.
func (s *server) submit(d channel.Delivery) error {
	m := d.Message
	man := d.Channel.Manifest()
	var body string
	if s.dir == channel.ToMain {
		tail := fmt.Sprintf("Use talk with runId '%s' to respond, or close_sub when the delivery is accepted and no more work is needed.", m.RunID)
		if _, closed, _ := d.Channel.Closed(); closed {
			tail = "This Sub has already closed; this is a retained final delivery."
		}
		head := "[Facets Sub message]\n"
		if man.Origin == manifest.OriginManual {
			var p struct{ Name, Description string }
			_ = json.Unmarshal(man.Profile, &p)
			head += "[User-invoked specialist: " + p.Name + "]\n"
			if p.Description != "" {
				head += "Purpose: " + p.Description + "\n"
			}
			head += manifest.ManualMainGuidance + "\n"
		}
		body = fmt.Sprintf("%sSub '%s' (%s) says:\n%s\n\n%s", head, man.Title, m.RunID, m.Text, tail)
	} else {
		body = "[Facets Main message]\nMain says:\n" + m.Text
	}
	s.emit(event{Type: "delivery", RunID: m.RunID, MessageID: m.ID, Text: channel.FormatDeliveryHeader(m.Receipt()) + body})
	return nil
}

// discoverLoop keeps the Main's set of run channels in step with the
// directories below Root/Safe(MainSession): runs appear when the runtime
// delegates and disappear when it removes a finished channel.
func (s *server) discoverLoop(ctx context.Context) {
	period := s.opts.Discover
	if period <= 0 {
		period = time.Second
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		s.discover()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *server) discover() {
	base := filepath.Join(s.opts.Root, channel.Safe(s.opts.MainSession))
	entries, err := os.ReadDir(base)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.problem(fmt.Sprintf("list run channels: %v", err))
		return
	}
	present := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		present[dir] = true
		s.mu.Lock()
		known := false
		for _, c := range s.chans {
			known = known || c.Dir() == dir
		}
		s.mu.Unlock()
		if known {
			continue
		}
		c, err := openOwned(dir)
		if err != nil {
			// A channel being created has no manifest yet; try again later.
			continue
		}
		s.mu.Lock()
		s.chans[c.Manifest().RunID] = c
		ready := s.ready
		s.mu.Unlock()
		if ready {
			s.w.Add(c)
		}
	}
	s.mu.Lock()
	var gone []*channel.Channel
	for id, c := range s.chans {
		if !present[c.Dir()] {
			gone = append(gone, c)
			delete(s.chans, id)
		}
	}
	s.mu.Unlock()
	for _, c := range gone {
		s.w.Remove(c)
		s.rx.Forget(c.Dir())
		c.Close()
	}
}

// openOwned opens a run channel as its Main: the Main created it, so it
// reads the capability token from the channel's own private manifest.
func openOwned(dir string) (*channel.Channel, error) {
	data, err := safefile.ReadPrivate(filepath.Join(dir, "manifest.json"), channel.MaxMessageBytes)
	if err != nil {
		return nil, err
	}
	var m struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return channel.Open(dir, strings.TrimSpace(m.Token))
}

func (s *server) closeChannels() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.chans {
		c.Close()
		delete(s.chans, id)
	}
}

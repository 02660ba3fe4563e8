package channel

// The watcher's file events come through fsnotify (inotify on Linux,
// kqueue on macOS and the BSDs) and are scanned on the watcher's own
// goroutine. One watcher on every platform: the tests that run in CI run
// this code. docs/performance.md has its latency against the floor and
// against a watcher that read inotify directly.

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions tunes a Watcher; zero values mean the defaults.
type WatchOptions struct {
	Rescan time.Duration // period of the fallback scan that also re-attaches watches
	// Report receives watch failures, once per distinct failure per channel.
	Report func(error)
	// ScanMoved, when set, takes the wakes of a channel whose only cause
	// is message files that appeared in its inbox (a writer's renames),
	// with their names in the order of their events, typically to
	// Receiver.ScanMoved plus what scan does besides Receiver.Scan. Every
	// other wake (a file written in place, a control file, a watch error,
	// Add, Flush, the rescan) calls scan. fsnotify reports a file renamed
	// into a directory as created there, as it does one created in place;
	// ScanMoved must therefore judge each file it is named (a partial one
	// is for a full scan), as Receiver.ScanMoved does.
	ScanMoved func(ch *Channel, names []string)

	// noNotify disables fsnotify so tests can prove the rescan alone delivers.
	noNotify bool
}

// Watcher wakes the receiving side of many channels: it scans a channel on
// start, after a relevant file event, and on every rescan. The first wake
// of a quiet channel is scanned at once; wakes that arrive while scans run
// are coalesced into one more scan of each woken channel, so a burst costs
// a few scans, not one per message. Scans run one at a time on the
// Watcher's goroutine, so one slow or broken channel delays but never
// stops the others.
type Watcher struct {
	direction Direction
	scan      func(*Channel)
	opts      WatchOptions
	fw        *fsnotify.Watcher

	mu       sync.Mutex
	channels map[string]*watched // by channel dir
	slots    map[string]slot     // attached watch path → owner
	dirty    map[string]bool     // woken by Add, waiting for the loop
	closing  map[string]bool     // channels told closing; kept after they end

	poke    chan struct{}
	flush   chan chan struct{}
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

type slot struct {
	dir   string // channel dir
	inbox bool   // inbox slot, otherwise the channel dir slot
}

// NewWatcher starts a watcher for the inboxes of direction d; scan is called
// with each channel that needs a look (typically Receiver.Scan, plus reading
// the control files this side reacts to: session.json and closed.json for
// the Main, close.json and interrupt.json for the Sub). Close must be called
// to release the watches, timers and goroutine.
func NewWatcher(d Direction, scan func(*Channel), opts WatchOptions) (*Watcher, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("watch: unknown direction %q", d)
	}
	if opts.Rescan <= 0 {
		opts.Rescan = DefaultRescan
	}
	if opts.Report == nil {
		opts.Report = func(error) {}
	}
	w := &Watcher{direction: d, scan: scan, opts: opts,
		channels: map[string]*watched{}, slots: map[string]slot{}, dirty: map[string]bool{}, closing: map[string]bool{},
		poke: make(chan struct{}, 1), flush: make(chan chan struct{}), done: make(chan struct{}), stopped: make(chan struct{})}
	if !opts.noNotify {
		fw, err := fsnotify.NewBufferedWatcher(eventBuffer)
		if err != nil {
			// Without file events the rescan still delivers, only slower.
			opts.Report(fmt.Errorf("file watching unavailable; the %v scan remains active: %w", opts.Rescan, err))
		} else {
			w.fw = fw
		}
	}
	go w.run()
	return w, nil
}

// drop forgets a channel and its watches; w.mu is held.
func (w *Watcher) drop(dir string) {
	if _, ok := w.channels[dir]; !ok {
		return
	}
	for _, p := range w.paths(dir) {
		w.detach(p)
	}
	delete(w.channels, dir)
	delete(w.dirty, dir)
}

// detach drops the watch of path, if attached; w.mu is held. fsnotify
// refuses to remove a watch whose directory is gone (its kernel watch is
// gone with it), which is fine here.
func (w *Watcher) detach(path string) {
	if _, ok := w.slots[path]; !ok {
		return
	}
	delete(w.slots, path)
	_ = w.fw.Remove(path)
}

// Close stops the watcher and waits until its goroutine, timers and
// fsnotify watches are released. Scan is not called after Close returns.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		<-w.stopped
		if w.fw != nil {
			if cerr := w.fw.Close(); cerr != nil {
				err = fmt.Errorf("close watcher: %w", cerr)
			}
		}
	})
	return err
}

// attach (re)adds the missing watches of one channel and reports a failure
// once per distinct message; a success clears the report. Without fsnotify
// there is nothing to attach, and NewWatcher has reported that already.
func (w *Watcher) attach(dir string) {
	if w.fw == nil {
		return
	}
	w.mu.Lock()
	wc, ok := w.channels[dir]
	if !ok {
		w.mu.Unlock()
		return
	}
	var errs []error
	for i, p := range w.paths(dir) {
		if _, ok := w.slots[p]; ok {
			continue
		}
		if err := w.fw.Add(p); err != nil {
			errs = append(errs, fmt.Errorf("watch %s: %w", p, err))
			continue
		}
		w.slots[p] = slot{dir: dir, inbox: i == 1}
	}
	var report error
	if len(errs) > 0 && w.ended(dir) {
		// The end of a closing channel, not a failure: its owner learns of
		// it from the next scan and stops watching it.
		wc.reported = ""
	} else if len(errs) > 0 {
		msg := errors.Join(errs...).Error()
		if msg != wc.reported {
			wc.reported = msg
			report = fmt.Errorf("file watching unavailable for %s; the %v scan remains active: %s", dir, w.opts.Rescan, msg)
		}
	} else {
		wc.reported = ""
	}
	w.mu.Unlock()
	if report != nil {
		w.opts.Report(report)
	}
}

// slotRemoved reports whether ev removes or renames a watched directory
// itself (a channel dir or an inbox), not a file in it.
func (w *Watcher) slotRemoved(ev fsnotify.Event) bool {
	if ev.Op&(fsnotify.Remove|fsnotify.Rename) == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.slots[ev.Name]
	return ok
}

// classify maps an event to the channel it wakes, detaching a watch whose
// directory went away so the rescan can retry it; moved is set for a
// message file that appeared in the inbox.
func (w *Watcher) classify(ev fsnotify.Event) (dir string, ok, moved bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.slots[ev.Name]; ok && ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
		w.detach(ev.Name)
		return s.dir, true, false
	}
	s, ok := w.slots[filepath.Dir(ev.Name)]
	// Removing or renaming a file away never adds a message or a control
	// request; ignoring it keeps the receiver's own acknowledgements from
	// waking it again, and a channel being removed from being scanned
	// half-removed.
	if ev.Op&(fsnotify.Create|fsnotify.Write) == 0 {
		return "", false, false
	}
	if !ok || !wakes(w.direction, s.inbox, filepath.Base(ev.Name)) {
		return "", false, false
	}
	// A file created (or renamed in) that is not also being written: its
	// name is all a receiver with a cursor needs. A write in place, or a
	// control file, is for a full scan.
	return s.dir, true, s.inbox && ev.Op == fsnotify.Create
}

// eventBuffer is how many file events fsnotify may hold for the loop while
// it scans, so a burst that arrives during a scan is taken in one drain
// (and costs one more scan) instead of one event, and one scan, at a time.
const eventBuffer = 4096

// run is the watcher's one goroutine: it takes file events, wakes and
// ticks, and scans the woken channels itself, one hand-off after the
// file event instead of two. Everything that arrived while a scan ran is
// drained before the next scan, so it is covered by that single scan.
func (w *Watcher) run() {
	defer close(w.stopped)
	var events chan fsnotify.Event
	var errs chan error
	if w.fw != nil {
		events, errs = w.fw.Events, w.fw.Errors
	}
	rescan := time.NewTicker(w.opts.Rescan)
	defer rescan.Stop()
	pending := map[string]wake{}
	var waiters []chan struct{} // Flush calls to answer after the next scans
	mark := func(dir string) { pending[dir] = wake{full: true} }
	// handle takes one input, waiting for it if block is set; it reports
	// false once the watcher closes, and took=false when nothing was ready.
	handle := func(block bool) (ok, took bool) {
		var in loopInput
		if block {
			select {
			case <-w.done:
				return false, true
			case in.ev, in.evOK = <-events:
				in.kind = inEvent
			case in.err, in.errOK = <-errs:
				in.kind = inError
			case <-w.poke:
				in.kind = inPoke
			case in.done = <-w.flush:
				in.kind = inFlush
			case <-rescan.C:
				in.kind = inRescan
			}
		} else {
			// A select picks among ready cases at random, so the drain has
			// its own select whose default runs only when nothing is ready.
			select {
			case <-w.done:
				return false, true
			case in.ev, in.evOK = <-events:
				in.kind = inEvent
			case in.err, in.errOK = <-errs:
				in.kind = inError
			case <-w.poke:
				in.kind = inPoke
			case in.done = <-w.flush:
				in.kind = inFlush
			case <-rescan.C:
				in.kind = inRescan
			default:
				return true, false
			}
		}
		switch in.kind {
		case inEvent:
			if !in.evOK {
				events = nil
				break
			}
			w.noteEvent(in.ev, pending)
		case inError:
			if !in.errOK {
				errs = nil
				break
			}
			w.noteError(in.err, pending)
		case inPoke:
			w.markDirty(mark)
		case inFlush:
			w.markDirty(mark)
			waiters = append(waiters, in.done)
		case inRescan:
			for dir := range w.snapshot() {
				w.attach(dir)
				mark(dir)
			}
		}
		return true, true
	}
	for {
		if ok, _ := handle(true); !ok {
			return
		}
		for {
			ok, took := handle(false)
			if !ok {
				return
			}
			if !took {
				break
			}
		}
		w.scanPending(pending)
		// Flushes asked before this drain are answered after it: what they
		// marked is scanned by now.
		for _, done := range waiters {
			close(done)
		}
		waiters = nil
	}
}

// noteEvent marks in pending the channel ev wakes: with the name of a
// message file that appeared in its inbox, as long as nothing else woke
// it; else for a full scan. A watched directory that went away is scanned
// a moment later instead.
func (w *Watcher) noteEvent(ev fsnotify.Event, pending map[string]wake) {
	removed := w.slotRemoved(ev)
	dir, ok, moved := w.classify(ev)
	switch {
	case !ok:
	case removed:
		// Usually the channel is being removed (its inbox goes before the
		// channel dir): scanning it mid-removal would report a broken
		// channel, so let the removal finish.
		time.AfterFunc(removalSettle, func() { w.markLater(dir) })
	case moved:
		if wk, seen := pending[dir]; !seen || !wk.full {
			pending[dir] = wake{moved: append(wk.moved, filepath.Base(ev.Name))}
		}
	default:
		pending[dir] = wake{full: true}
	}
}

// noteError marks every channel for a full scan: an event queue overflow
// or a watch error may hide events of any of them.
func (w *Watcher) noteError(err error, pending map[string]wake) {
	w.opts.Report(fmt.Errorf("file watching error; the %v scan remains active: %w", w.opts.Rescan, err))
	for dir := range w.snapshot() {
		pending[dir] = wake{full: true}
	}
}

// scanPending scans the channels in pending in a fixed order and empties it.
func (w *Watcher) scanPending(pending map[string]wake) {
	if len(pending) == 0 {
		return
	}
	w.scanAll(slices.Sorted(maps.Keys(pending)), pending)
	clear(pending)
}

// loopInput is one thing the watcher's loop took.
type loopInput struct {
	kind  int
	ev    fsnotify.Event
	evOK  bool
	err   error
	errOK bool
	done  chan struct{}
}

// The kinds of loopInput.
const (
	inEvent = iota
	inError
	inPoke
	inFlush
	inRescan
)

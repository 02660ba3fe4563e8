//go:build linux

package channel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// WatchOptions tunes a Watcher; zero values mean the defaults.
type WatchOptions struct {
	Rescan time.Duration // period of the fallback scan that also re-attaches watches
	// Report receives watch failures, once per distinct failure per channel.
	Report func(error)
	// ScanMoved, when set, takes the wakes of a channel whose only cause
	// is message files moved into its inbox (a writer's renames), with
	// their names in the order of their events, typically to
	// Receiver.ScanMoved plus what scan does besides Receiver.Scan. Every
	// other wake (a file created or written in place, a control file, an
	// event queue overflow, Add, Flush, the rescan) calls scan.
	ScanMoved func(ch *Channel, names []string)

	// noNotify disables inotify so tests can prove the rescan alone delivers.
	noNotify bool
}

// Watcher wakes the receiving side of many channels: it scans a channel on
// start, after a relevant file event, and on every rescan. The first wake
// of a quiet channel is scanned at once; wakes that arrive while scans run
// are coalesced into one more scan of each woken channel, so a burst costs
// a few scans, not one per message. Scans run one at a time, so one slow
// or broken channel delays but never stops the others.
//
// File events come from inotify directly: the goroutine that reads them
// scans the channels they wake itself, with no hand-off between the
// kernel's wake-up and the scan, and the watches ask only for what can
// wake a scan (a file created, moved in or written, a watched directory
// removed or moved), so a receiver's own acknowledgements and the moves
// of a writer's temp files cost it no wake-ups.
type Watcher struct {
	direction Direction
	scan      func(*Channel)
	opts      WatchOptions
	ino       *os.File // the inotify instance, read through the runtime poller; nil without one
	inoFd     int      // its descriptor (Fd would make it blocking)

	mu       sync.Mutex
	channels map[string]*watched // by channel dir
	slots    map[string]slot     // attached watch path → owner
	wds      map[int32]string    // inotify watch descriptor → attached path
	dirty    map[string]bool     // woken by Add, waiting for the loop
	closing  map[string]bool     // channels told closing; kept after they end
	closed   bool                // Close has begun: no more watches

	scanMu sync.Mutex // held by whichever goroutine scans

	poke       chan struct{}
	flush      chan chan struct{}
	done       chan struct{}
	stopped    chan struct{}
	readerDone chan struct{}
	once       sync.Once
}

type slot struct {
	dir   string // channel dir
	inbox bool   // inbox slot, otherwise the channel dir slot
	wd    int32
}

// inboxMask is what a watched inbox reports: files created, moved in or
// written (a message appearing), and the inbox itself removed or moved
// away. The channel dir (channelMask) also reports entries removed or
// moved out, as that is how an inbox's removal shows while the Channel
// holds it open: the kernel reports the removal of a directory itself only
// once its last descriptor is closed.
const (
	inboxMask   = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MODIFY | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	channelMask = inboxMask | unix.IN_DELETE | unix.IN_MOVED_FROM
)

// NewWatcher starts a watcher for the inboxes of direction d; scan is called
// with each channel that needs a look (typically Receiver.Scan, plus reading
// the control files this side reacts to: session.json and closed.json for
// the Main, close.json and interrupt.json for the Sub). Close must be called
// to release the watches, timers and goroutines.
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
	w := &Watcher{direction: d, scan: scan, opts: opts, inoFd: -1,
		channels: map[string]*watched{}, slots: map[string]slot{}, wds: map[int32]string{}, dirty: map[string]bool{}, closing: map[string]bool{},
		poke: make(chan struct{}, 1), flush: make(chan chan struct{}), done: make(chan struct{}), stopped: make(chan struct{}),
		readerDone: make(chan struct{})}
	if !opts.noNotify {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			// Without inotify the rescan still delivers, only slower.
			opts.Report(fmt.Errorf("file watching unavailable; the %v scan remains active: inotify: %w", opts.Rescan, err))
		} else {
			w.ino, w.inoFd = os.NewFile(uintptr(fd), "inotify"), fd
		}
	}
	go w.run()
	if w.ino != nil {
		go w.readEvents()
	} else {
		close(w.readerDone)
	}
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

// detach drops the watch of path, if attached; w.mu is held.
func (w *Watcher) detach(path string) {
	s, ok := w.slots[path]
	if !ok {
		return
	}
	delete(w.slots, path)
	delete(w.wds, s.wd)
	if !w.closed {
		_, _ = unix.InotifyRmWatch(w.inoFd, uint32(s.wd))
	}
}

// Close stops the watcher and waits until its goroutines, timers and
// watches are released. Scan is not called after Close returns.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		<-w.stopped
		if w.ino != nil {
			w.mu.Lock()
			w.closed = true // no watch is added to, or removed from, a closed descriptor
			w.mu.Unlock()
			// Closing unblocks the reader's pending read.
			if cerr := w.ino.Close(); cerr != nil {
				err = fmt.Errorf("close watcher: %w", cerr)
			}
		}
		<-w.readerDone
	})
	return err
}

// attach (re)adds the missing watches of one channel and reports a failure
// once per distinct message; a success clears the report. Without inotify
// there is nothing to attach, and NewWatcher has reported that already.
func (w *Watcher) attach(dir string) {
	if w.ino == nil {
		return
	}
	w.mu.Lock()
	wc, ok := w.channels[dir]
	if !ok || w.closed {
		w.mu.Unlock()
		return
	}
	var errs []error
	for i, p := range w.paths(dir) {
		if _, ok := w.slots[p]; ok {
			continue
		}
		mask := uint32(channelMask)
		if i == 1 {
			mask = inboxMask
		}
		wd, err := unix.InotifyAddWatch(w.inoFd, p, mask)
		if err != nil {
			errs = append(errs, fmt.Errorf("watch %s: %w", p, err))
			continue
		}
		if old, ok := w.wds[int32(wd)]; ok {
			// The same directory under another path (a watch descriptor
			// names an inode): the newer path owns it.
			delete(w.slots, old)
		}
		w.slots[p] = slot{dir: dir, inbox: i == 1, wd: int32(wd)}
		w.wds[int32(wd)] = p
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

// readEvents reads inotify events and scans the channels they wake, on
// this goroutine. Events that arrive during a scan wait in the kernel's
// queue and come in the next read, all at once, so they cost one more
// scan.
func (w *Watcher) readEvents() {
	defer close(w.readerDone)
	buf := make([]byte, 64<<10)
	pending := map[string]wake{}
	for {
		n, err := w.ino.Read(buf)
		if err != nil {
			select {
			case <-w.done:
				return
			default:
			}
			// Not a closed watcher: the rescan goes on delivering.
			w.opts.Report(fmt.Errorf("file watching error; the %v scan remains active: %w", w.opts.Rescan, err))
			return
		}
		w.parseEvents(buf[:n], pending)
		w.scanPending(pending)
	}
}

// parseEvents marks in pending the channels the events in buf wake, with
// the names of the message files moved into their inboxes as long as
// nothing else woke them.
func (w *Watcher) parseEvents(buf []byte, pending map[string]wake) {
	for len(buf) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(buf[0:]))
		mask := binary.NativeEndian.Uint32(buf[4:])
		size := int(binary.NativeEndian.Uint32(buf[12:]))
		if unix.SizeofInotifyEvent+size > len(buf) {
			return
		}
		name := string(bytes.TrimRight(buf[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+size], "\x00"))
		buf = buf[unix.SizeofInotifyEvent+size:]
		if mask&unix.IN_Q_OVERFLOW != 0 {
			// An overflow may hide events of any channel.
			w.opts.Report(fmt.Errorf("file watching error; the %v scan remains active: inotify event queue overflow", w.opts.Rescan))
			for dir := range w.snapshot() {
				pending[dir] = wake{full: true}
			}
			continue
		}
		w.mu.Lock()
		path, ok := w.wds[wd]
		s := w.slots[path]
		if ok && mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
			// A watched directory went away: detach its watch so the
			// rescan can retry it. Usually the channel is being removed
			// (its inbox goes before the channel dir): scanning it
			// mid-removal would report a broken channel, so let the
			// removal finish.
			w.detach(path)
			w.mu.Unlock()
			dir := s.dir
			time.AfterFunc(removalSettle, func() { w.markLater(dir) })
			continue
		}
		if ok && !s.inbox && mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0 && name == string(w.direction) {
			// The inbox was removed or moved away.
			inbox := filepath.Join(path, name)
			if _, attached := w.slots[inbox]; attached {
				w.detach(inbox)
				w.mu.Unlock()
				dir := s.dir
				time.AfterFunc(removalSettle, func() { w.markLater(dir) })
				continue
			}
		}
		w.mu.Unlock()
		// Removing or renaming a file away never adds a message or a
		// control request.
		if ok && mask&(unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_MODIFY) != 0 && wakes(w.direction, s.inbox, name) {
			wk := pending[s.dir]
			if s.inbox && mask&unix.IN_MOVED_TO != 0 && !wk.full {
				// A rename publishes a whole file: its name is all a
				// receiver with a cursor needs (Receiver.ScanMoved).
				wk.moved = append(wk.moved, name)
			} else {
				// A file created or written in place may be partial, and
				// control files are the scan's: a full scan.
				wk = wake{full: true}
			}
			pending[s.dir] = wk
		}
	}
}

// scanPending scans the channels in pending in a fixed order, one scanning
// goroutine at a time, and empties it.
func (w *Watcher) scanPending(pending map[string]wake) {
	if len(pending) == 0 {
		return
	}
	dirs := slices.Sorted(maps.Keys(pending))
	w.scanMu.Lock()
	defer w.scanMu.Unlock()
	w.scanAll(dirs, pending)
	clear(pending)
}

// run takes wakes (Add, Flush, timers) and rescan ticks and scans what
// they woke; file events are readEvents' work.
func (w *Watcher) run() {
	defer close(w.stopped)
	rescan := time.NewTicker(w.opts.Rescan)
	defer rescan.Stop()
	pending := map[string]wake{}
	mark := func(dir string) { pending[dir] = wake{full: true} }
	for {
		var waiter chan struct{}
		select {
		case <-w.done:
			return
		case <-w.poke:
			w.markDirty(mark)
		case waiter = <-w.flush:
			w.markDirty(mark)
		case <-rescan.C:
			for dir := range w.snapshot() {
				w.attach(dir)
				mark(dir)
			}
		}
		w.scanPending(pending)
		// A Flush is answered once what it marked is scanned.
		if waiter != nil {
			close(waiter)
		}
	}
}

package channel

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The Watcher's bookkeeping of channels and wakes; its file events and
// loop are in watch_events.go.

// DefaultRescan is the period of the fallback scan, which catches what file
// events missed and re-attaches watches.
const DefaultRescan = 5 * time.Second

type watched struct {
	ch       *Channel
	reported string // last reported watch failure
}

// Add starts watching ch and schedules its initial scan.
func (w *Watcher) Add(ch *Channel) {
	w.mu.Lock()
	if _, ok := w.channels[ch.Dir()]; !ok {
		w.channels[ch.Dir()] = &watched{ch: ch}
	}
	w.dirty[ch.Dir()] = true
	w.mu.Unlock()
	w.attach(ch.Dir())
	w.wake()
}

// Remove stops watching ch; a scan already running may still finish.
func (w *Watcher) Remove(ch *Channel) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(ch.Dir())
}

// Closing tells the watcher that ch is being closed, so its directory may
// be removed at any moment (the runtime removes a closed run's channel once
// its messages are delivered, and a channel is never recreated). From then
// on a missing directory is the end of the channel, not a failure: it is
// not reported (also after a later Add), and scans go on until the owner,
// who sees the directory gone, calls Remove.
func (w *Watcher) Closing(ch *Channel) {
	w.mu.Lock()
	w.closing[ch.Dir()] = true
	w.mu.Unlock()
}

// ended reports whether dir is a channel told closing whose directory is
// gone; w.mu is held.
func (w *Watcher) ended(dir string) bool {
	if !w.closing[dir] {
		return false
	}
	_, err := os.Lstat(dir)
	return errors.Is(err, fs.ErrNotExist)
}

// Flush scans every channel woken so far (by Add or a file event already
// read) and returns when those scans are done or the watcher is closed.
// With Add of every channel before it, it is a barrier: whatever was
// written before is seen.
func (w *Watcher) Flush() {
	done := make(chan struct{})
	select {
	case w.flush <- done:
		<-done
	case <-w.stopped:
	}
}

func (w *Watcher) wake() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// paths are the watched directories of a channel: the channel dir and the inbox.
func (w *Watcher) paths(dir string) [2]string {
	return [2]string{dir, filepath.Join(dir, string(w.direction))}
}

// wakes decides whether a file event is relevant: any .json name in the
// inbox, and on the channel dir only the control files this side reacts to.
// Temp files (*.tmp) and unrelated control writes are ignored.
func wakes(d Direction, inbox bool, name string) bool {
	if inbox {
		return strings.HasSuffix(name, ".json")
	}
	if d == ToMain {
		return name == sessionName || name == closedFile
	}
	return name == closeFile || name == interruptFile
}

// removalSettle is how long the scan after a watched directory's removal
// waits, so a channel being removed is gone, not half there, when scanned.
const removalSettle = 20 * time.Millisecond

// markDirty hands the channels woken by Add to the loop.
func (w *Watcher) markDirty(mark func(string)) {
	w.mu.Lock()
	for dir := range w.dirty {
		mark(dir)
	}
	clear(w.dirty)
	w.mu.Unlock()
}

// markLater wakes dir from outside the loop (a timer), as Add does.
func (w *Watcher) markLater(dir string) {
	w.mu.Lock()
	w.dirty[dir] = true
	w.mu.Unlock()
	w.wake()
}

func (w *Watcher) snapshot() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]bool, len(w.channels))
	for dir := range w.channels {
		out[dir] = true
	}
	return out
}

// wake is what woke a channel: only message files moved into its inbox
// (moved, in the order of their events), or anything else (full).
type wake struct {
	moved []string
	full  bool
}

// scanAll scans dirs in order, skipping channels no longer watched. A
// channel whose wake names only moved-in files goes to the ScanMoved
// option with their names, when there is one; every other, to scan. woken
// may be nil: then every scan is a full one.
func (w *Watcher) scanAll(dirs []string, woken map[string]wake) {
	for _, dir := range dirs {
		select {
		case <-w.done:
			return
		default:
		}
		w.mu.Lock()
		wc, ok := w.channels[dir]
		w.mu.Unlock()
		if !ok {
			continue
		}
		if wk := woken[dir]; !wk.full && len(wk.moved) > 0 && w.opts.ScanMoved != nil {
			w.opts.ScanMoved(wc.ch, wk.moved)
		} else {
			w.scan(wc.ch)
		}
	}
}

package channel

import (
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/google/go-cmp/cmp"
)

// TestWatcherDeliversMovedFilesWithoutListing: through real file events
// (inotify here, through fsnotify), every message sent after the watcher's first scan is delivered
// without listing the inbox (the writer publishes by rename, and nothing
// else wakes the channel).
func TestWatcherDeliversMovedFilesWithoutListing(t *testing.T) {
	c := newTestChannel(t)
	lc := &listCounter{}
	lc.install(c)
	col := newCollector()
	rx := NewReceiver(ToMain, col.receipts, col.submit, nil)
	w := startWatcher(t, ToMain, rx, WatchOptions{Rescan: time.Hour}, c)
	w.Flush()
	listed := lc.count()
	for i := range 20 {
		text := "message " + strconv.Itoa(i)
		mustSend(t, c, ToMain, text)
		col.waitFor(t, text)
	}
	if n := lc.count() - listed; n != 0 {
		t.Errorf("%d listings after the first scan, want none", n)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for text, n := range col.got {
		if n != 1 {
			t.Errorf("%q delivered %d times", text, n)
		}
	}
}

// fakeWatches gives a watcher without file events the watches of c's
// inbox and channel dir, so noteEvent can be fed events that never come
// from a kernel.
func fakeWatches(w *Watcher, c *Channel) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.slots[filepath.Join(c.Dir(), string(w.direction))] = slot{dir: c.Dir(), inbox: true}
	w.slots[c.Dir()] = slot{dir: c.Dir()}
}

// TestNoteEventNamesOnlyMovedFiles: a channel woken only by message files
// that appeared in its inbox carries their names in event order; a file
// written in place, a control file or a queue overflow (before or after)
// makes its wake a full scan, and temp files and removals wake nothing.
func TestNoteEventNamesOnlyMovedFiles(t *testing.T) {
	c := newTestChannel(t)
	w, err := NewWatcher(ToMain, func(*Channel) {}, WatchOptions{noNotify: true, Rescan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Add(c)
	w.Flush()
	fakeWatches(w, c)
	inbox := filepath.Join(c.Dir(), string(ToMain))
	in := func(op fsnotify.Op, name string) fsnotify.Event {
		return fsnotify.Event{Name: filepath.Join(inbox, name), Op: op}
	}
	moved := func(name string) fsnotify.Event { return in(fsnotify.Create, name) }
	overflow := errors.New("queue overflow")
	full := map[string]wake{c.Dir(): {full: true}}
	cases := []struct {
		name   string
		events []any // fsnotify.Event or error
		want   map[string]wake
	}{
		{"moved", []any{moved("a.json"), moved("b.json")}, map[string]wake{c.Dir(): {moved: []string{"a.json", "b.json"}}}},
		{"temp files", []any{in(fsnotify.Create, "a.json.1.ab.tmp"), in(fsnotify.Write, "a.json.1.ab.tmp")}, map[string]wake{}},
		{"removed and renamed away", []any{in(fsnotify.Remove, "a.json"), in(fsnotify.Rename, "b.json"), in(fsnotify.Chmod, "c.json")}, map[string]wake{}},
		{"written in place", []any{moved("a.json"), in(fsnotify.Write, "a.json"), moved("c.json")}, full},
		{"created and written at once", []any{in(fsnotify.Create|fsnotify.Write, "a.json")}, full},
		{"control file", []any{moved("a.json"), fsnotify.Event{Name: filepath.Join(c.Dir(), sessionName), Op: fsnotify.Create}}, full},
		{"another side's control file", []any{fsnotify.Event{Name: filepath.Join(c.Dir(), closeFile), Op: fsnotify.Create}}, map[string]wake{}},
		{"overflow after", []any{moved("a.json"), overflow}, full},
		{"overflow before", []any{overflow, moved("a.json")}, full},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]wake{}
			for _, e := range tc.events {
				switch e := e.(type) {
				case fsnotify.Event:
					w.noteEvent(e, got)
				case error:
					w.noteError(e, got)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(wake{})); diff != "" {
				t.Errorf("wakes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWatcherOverflowScansInFull: after a queue overflow the channel is
// scanned in full (its listing finds every message, in order), even with
// a moved-in name read before the overflow; moved-in names alone go to
// ScanMoved, also several at once.
func TestWatcherOverflowScansInFull(t *testing.T) {
	c := newTestChannel(t)
	lc := &listCounter{}
	lc.install(c)
	col := newCollector()
	rx := NewReceiver(ToMain, col.receipts, col.submit, nil)
	var mu sync.Mutex
	var fulls, moves int
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return fulls, moves
	}
	w, err := NewWatcher(ToMain, func(ch *Channel) {
		mu.Lock()
		fulls++
		mu.Unlock()
		rx.Scan(ch)
	}, WatchOptions{noNotify: true, Rescan: time.Hour, ScanMoved: func(ch *Channel, names []string) {
		mu.Lock()
		moves++
		mu.Unlock()
		rx.ScanMoved(ch, names)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Add(c)
	w.Flush()
	fakeWatches(w, c)
	var sent []Message
	for _, text := range []string{"one", "two", "three"} {
		sent = append(sent, mustSend(t, c, ToMain, text))
	}
	inbox := filepath.Join(c.Dir(), string(ToMain))
	movedIn := func(m Message) fsnotify.Event {
		return fsnotify.Event{Name: filepath.Join(inbox, movedName(m)), Op: fsnotify.Create}
	}
	pending := map[string]wake{}
	w.noteEvent(movedIn(sent[0]), pending)
	w.noteError(errors.New("queue overflow"), pending)
	fullsBefore, _ := counts()
	listed := lc.count()
	w.scanPending(pending)
	if f, m := counts(); f != fullsBefore+1 || m != 0 || lc.count() == listed {
		t.Fatalf("after an overflow: %d full scans, %d moved scans, %d listings; want one full scan", f-fullsBefore, m, lc.count()-listed)
	}
	for _, text := range []string{"four", "five"} {
		sent = append(sent, mustSend(t, c, ToMain, text))
	}
	w.noteEvent(movedIn(sent[3]), pending)
	w.noteEvent(movedIn(sent[4]), pending)
	listed = lc.count()
	w.scanPending(pending)
	if _, m := counts(); m != 1 || lc.count() != listed {
		t.Fatalf("moved-in names: %d moved scans, %d listings; want one moved scan and none", m, lc.count()-listed)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, m := range sent {
		if col.got[m.Text] != 1 {
			t.Errorf("%q delivered %d times", m.Text, col.got[m.Text])
		}
	}
}

//go:build linux

package channel

import (
	"encoding/binary"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestWatcherDeliversMovedFilesWithoutListing: through real inotify
// events, every message sent after the watcher's first scan is delivered
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

// inotifyEvent encodes one inotify event as the kernel does.
func inotifyEvent(wd int32, mask uint32, name string) []byte {
	size := 0
	if name != "" {
		size = (len(name) + 1 + 15) / 16 * 16 // NUL-padded, as the kernel aligns names
	}
	buf := make([]byte, unix.SizeofInotifyEvent+size)
	binary.NativeEndian.PutUint32(buf[0:], uint32(wd))
	binary.NativeEndian.PutUint32(buf[4:], mask)
	binary.NativeEndian.PutUint32(buf[12:], uint32(size))
	copy(buf[unix.SizeofInotifyEvent:], name)
	return buf
}

// fakeWatches gives a watcher without inotify the watch descriptors 1
// (the inbox of c) and 2 (its channel dir), so parseEvents can be fed
// events that never come from a kernel.
func fakeWatches(w *Watcher, c *Channel) {
	inbox := filepath.Join(c.Dir(), string(w.direction))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.slots[inbox] = slot{dir: c.Dir(), inbox: true, wd: 1}
	w.wds[1] = inbox
	w.slots[c.Dir()] = slot{dir: c.Dir(), wd: 2}
	w.wds[2] = c.Dir()
}

// TestParseEventsNamesOnlyMovedFiles: a channel woken only by message
// files moved into its inbox carries their names in event order; a file
// created or written in place, a control file or a queue overflow (before
// or after) makes its wake a full scan, and temp files wake nothing.
func TestParseEventsNamesOnlyMovedFiles(t *testing.T) {
	c := newTestChannel(t)
	w, err := NewWatcher(ToMain, func(*Channel) {}, WatchOptions{noNotify: true, Rescan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Add(c)
	w.Flush()
	fakeWatches(w, c)
	moved := func(name string) []byte { return inotifyEvent(1, unix.IN_MOVED_TO, name) }
	overflow := inotifyEvent(-1, unix.IN_Q_OVERFLOW, "")
	full := map[string]wake{c.Dir(): {full: true}}
	cases := []struct {
		name   string
		events [][]byte
		want   map[string]wake
	}{
		{"moved", [][]byte{moved("a.json"), moved("b.json")}, map[string]wake{c.Dir(): {moved: []string{"a.json", "b.json"}}}},
		{"temp files", [][]byte{inotifyEvent(1, unix.IN_CREATE, "a.json.1.ab.tmp"), inotifyEvent(1, unix.IN_MODIFY, "a.json.1.ab.tmp")}, map[string]wake{}},
		{"created in place", [][]byte{moved("a.json"), inotifyEvent(1, unix.IN_CREATE, "b.json"), moved("c.json")}, full},
		{"written in place", [][]byte{moved("a.json"), inotifyEvent(1, unix.IN_MODIFY, "a.json")}, full},
		{"control file", [][]byte{moved("a.json"), inotifyEvent(2, unix.IN_MOVED_TO, sessionName)}, full},
		{"overflow after", [][]byte{moved("a.json"), overflow}, full},
		{"overflow before", [][]byte{overflow, moved("a.json")}, full},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf []byte
			for _, e := range tc.events {
				buf = append(buf, e...)
			}
			got := map[string]wake{}
			w.parseEvents(buf, got)
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
	pending := map[string]wake{}
	w.parseEvents(append(inotifyEvent(1, unix.IN_MOVED_TO, movedName(sent[0])), inotifyEvent(-1, unix.IN_Q_OVERFLOW, "")...), pending)
	fullsBefore, _ := counts()
	listed := lc.count()
	w.scanPending(pending)
	if f, m := counts(); f != fullsBefore+1 || m != 0 || lc.count() == listed {
		t.Fatalf("after an overflow: %d full scans, %d moved scans, %d listings; want one full scan", f-fullsBefore, m, lc.count()-listed)
	}
	for _, text := range []string{"four", "five"} {
		sent = append(sent, mustSend(t, c, ToMain, text))
	}
	w.parseEvents(append(inotifyEvent(1, unix.IN_MOVED_TO, movedName(sent[3])), inotifyEvent(1, unix.IN_MOVED_TO, movedName(sent[4]))...), pending)
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

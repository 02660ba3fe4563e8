package channel

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bound is a liveness limit, not a timing assertion: tests fail only if
// something never happens.
const bound = 10 * time.Second

// collector is a thread-safe session fed by a watcher.
type collector struct {
	mu       sync.Mutex
	receipts *MemoryReceipts
	got      map[string]int
	changed  chan struct{}
}

func newCollector() *collector {
	return &collector{receipts: NewMemoryReceipts(), got: map[string]int{}, changed: make(chan struct{}, 1)}
}

func (c *collector) submit(d Delivery) error {
	c.mu.Lock()
	c.got[d.Message.Text]++
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return c.receipts.Record(d.Message.Receipt())
}

func (c *collector) waitFor(t *testing.T, texts ...string) {
	t.Helper()
	deadline := time.After(bound)
	for {
		c.mu.Lock()
		missing := ""
		for _, s := range texts {
			if c.got[s] == 0 {
				missing = s
				break
			}
		}
		c.mu.Unlock()
		if missing == "" {
			return
		}
		select {
		case <-c.changed:
		case <-deadline:
			t.Fatalf("message %q never delivered", missing)
		}
	}
}

func TestWakesIgnoresTempAndUnrelatedFiles(t *testing.T) {
	cases := []struct {
		d     Direction
		inbox bool
		name  string
		want  bool
	}{
		{ToMain, true, "abc.json", true},
		{ToMain, true, "abc.json.123.deadbeef0000.tmp", false},
		{ToMain, false, "session.json", true},
		{ToMain, false, "closed.json", true},
		{ToMain, false, "close.json", false},
		{ToMain, false, "to-main-sequence.json", false},
		{ToMain, false, "active-turn.json", false},
		{ToSub, false, "close.json", true},
		{ToSub, false, "interrupt.json", true},
		{ToSub, false, "session.json", false},
		{ToSub, false, "interrupt.json.1.aa.tmp", false},
	}
	for _, c := range cases {
		if got := wakes(c.d, c.inbox, c.name); got != c.want {
			t.Errorf("wakes(%s, inbox=%v, %q) = %v, want %v", c.d, c.inbox, c.name, got, c.want)
		}
	}
}

func TestWatcherDeliversAcrossChannels(t *testing.T) {
	col := newCollector()
	rx := NewReceiver(ToMain, col.receipts, col.submit, nil)
	var chans []*Channel
	for range 3 {
		chans = append(chans, newTestChannel(t))
	}
	// A message sent before the watcher starts is found by the initial scan.
	if _, err := chans[0].Send(ToMain, "early"); err != nil {
		t.Fatal(err)
	}
	startWatcher(t, ToMain, rx, WatchOptions{}, chans...)
	col.waitFor(t, "early")
	var want []string
	for i, c := range chans {
		for j := range 5 {
			s := string(rune('a'+i)) + strings.Repeat("!", j)
			if _, err := c.Send(ToMain, s); err != nil {
				t.Fatal(err)
			}
			want = append(want, s)
		}
	}
	col.waitFor(t, want...)
	col.mu.Lock()
	defer col.mu.Unlock()
	for s, n := range col.got {
		if n != 1 {
			t.Errorf("%q delivered %d times", s, n)
		}
	}
}

func TestRescanRecoversWithoutEvents(t *testing.T) {
	col := newCollector()
	rx := NewReceiver(ToSub, col.receipts, col.submit, nil)
	c := newTestChannel(t)
	startWatcher(t, ToSub, rx, WatchOptions{Rescan: 30 * time.Millisecond, noNotify: true}, c)
	if _, err := c.Send(ToSub, "missed event"); err != nil {
		t.Fatal(err)
	}
	col.waitFor(t, "missed event")
}

func TestRescanReattachesFailedWatch(t *testing.T) {
	col := newCollector()
	rx := NewReceiver(ToMain, col.receipts, col.submit, nil)
	c := newTestChannel(t)
	inbox := filepath.Join(c.Dir(), "to-main")
	aside := inbox + ".aside"
	if err := os.Rename(inbox, aside); err != nil {
		t.Fatal(err)
	}
	reports := make(chan error, 10)
	w := startWatcher(t, ToMain, rx, WatchOptions{Rescan: 30 * time.Millisecond, Report: func(err error) { reports <- err }}, c)
	select {
	case err := <-reports:
		if !strings.Contains(err.Error(), "file watching unavailable") {
			t.Fatalf("report %v", err)
		}
	case <-time.After(bound):
		t.Fatal("failed watch not reported")
	}
	if err := os.Rename(aside, inbox); err != nil {
		t.Fatal(err)
	}
	// Wait until the rescan has re-attached the inbox watch.
	deadline := time.Now().Add(bound)
	for {
		w.mu.Lock()
		_, attached := w.slots[inbox]
		ok := attached && w.channels[c.Dir()].reported == ""
		w.mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("inbox watch never re-attached")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.Send(ToMain, "after reattach"); err != nil {
		t.Fatal(err)
	}
	col.waitFor(t, "after reattach")
	select {
	case err := <-reports:
		t.Errorf("unchanged failure reported twice: %v", err)
	default:
	}
}

func TestWatcherCloseReleasesGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	col := newCollector()
	rx := NewReceiver(ToMain, col.receipts, col.submit, nil)
	w, err := NewWatcher(ToMain, func(c *Channel) { rx.Scan(c) }, WatchOptions{Rescan: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 4 {
		c := newTestChannel(t)
		w.Add(c)
		s := "m" + string(rune('0'+i))
		if _, err := c.Send(ToMain, s); err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	col.waitFor(t, want...)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	deadline := time.Now().Add(bound)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatcherBurstCostsFewScans holds the initial scan open while 100
// messages arrive: the wakes they cause while it runs must collapse into a
// handful of scans, not one per message.
func TestWatcherBurstCostsFewScans(t *testing.T) {
	c := newTestChannel(t)
	col := newCollector()
	rx := NewReceiver(ToMain, col.receipts, col.submit, nil)
	var scans atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	w, err := NewWatcher(ToMain, func(c *Channel) {
		if scans.Add(1) == 1 {
			close(started)
			<-release
		}
		rx.Scan(c)
	}, WatchOptions{Rescan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Add(c)
	<-started
	var want []string
	for i := range 100 {
		s := "burst " + strconv.Itoa(i)
		if _, err := c.Send(ToMain, s); err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	close(release)
	col.waitFor(t, want...)
	// One more message, sent after the burst: its wake queues behind all
	// of the burst's, so once it is delivered every scan the burst caused
	// has run (and a wake after a burst is still delivered).
	if _, err := c.Send(ToMain, "after"); err != nil {
		t.Fatal(err)
	}
	col.waitFor(t, "after")
	if n := scans.Load(); n > 6 {
		t.Errorf("a burst of 100 messages and one more cost %d scans, want a handful", n)
	}
}

// TestWatcherClosingChannelRemovalIsTheEnd: a channel the watcher was told
// is closing ends quietly when its directory is removed, also when it is
// woken again afterwards (as a Main's bridge does after close_sub) and on
// later rescans; the removal of a channel not told closing is still
// reported. A second, live channel is the barrier: once it has been
// scanned after several rescans, every attach of the removed one has run.
func TestWatcherClosingChannelRemovalIsTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		closing bool
	}{{"told closing", true}, {"not told", false}} {
		t.Run(tc.name, func(t *testing.T) {
			gone, live := newTestChannel(t), newTestChannel(t)
			var mu sync.Mutex
			var reports []string
			liveScans := make(chan struct{}, 64)
			w, err := NewWatcher(ToMain, func(c *Channel) {
				if c.Dir() == live.Dir() {
					liveScans <- struct{}{}
				}
			}, WatchOptions{Rescan: 20 * time.Millisecond, Report: func(err error) {
				mu.Lock()
				reports = append(reports, err.Error())
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.Add(gone)
			w.Add(live)
			if tc.closing {
				w.Closing(gone)
			}
			if err := os.RemoveAll(gone.Dir()); err != nil {
				t.Fatal(err)
			}
			w.Add(gone) // a wake after the removal
			deadline := time.After(bound)
			for n := 0; n < 4; {
				select {
				case <-liveScans:
					n++
				case <-deadline:
					t.Fatal("the live channel was not rescanned")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.closing && len(reports) > 0 {
				t.Errorf("removing a closing channel was reported: %q", reports)
			}
			if !tc.closing && (len(reports) == 0 || !strings.Contains(reports[0], "no such file or directory")) {
				t.Errorf("removing a channel not told closing was not reported: %q", reports)
			}
		})
	}
}

// TestWatcherFlushIsABarrier: a wake is scanned on the scan goroutine some
// time later; Flush returns only after that scan, so the message is there
// when it returns.
func TestWatcherFlushIsABarrier(t *testing.T) {
	col := newCollector()
	rx := NewReceiver(ToMain, col.receipts, col.submit, nil)
	ch := newTestChannel(t)
	w := startWatcher(t, ToMain, rx, WatchOptions{Rescan: time.Hour, noNotify: true}, ch)
	w.Flush()
	if _, err := ch.Send(ToMain, "late"); err != nil {
		t.Fatal(err)
	}
	w.Add(ch)
	w.Flush()
	col.mu.Lock()
	n := col.got["late"]
	col.mu.Unlock()
	if n != 1 {
		t.Errorf("after Flush the message was delivered %d times, want 1", n)
	}
	w.Close()
	w.Flush() // returns after Close too
}

package channel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// listCounter counts the inbox listings of the channels it is installed
// on: a scan that delivers without listing leaves it unchanged.
type listCounter struct {
	mu sync.Mutex
	n  int
}

func (l *listCounter) install(c *Channel) {
	c.list = func(dir *os.File) ([]string, error) {
		l.mu.Lock()
		l.n++
		l.mu.Unlock()
		return listNames(dir)
	}
}

func (l *listCounter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// movedName is the inbox file name of m, as its file event names it.
func movedName(m Message) string { return Safe(m.ID) + ".json" }

// movedSetup is a channel with a counted lister and a receiver whose
// session records receipts at once (autoReceipt), after the first full
// scan: the state in which ScanMoved may skip the listing.
func movedSetup(t *testing.T, autoReceipt bool) (*Channel, *listCounter, *session, *Receiver, *[]Problem) {
	t.Helper()
	c := newTestChannel(t)
	lc := &listCounter{}
	lc.install(c)
	sess := &session{receipts: NewMemoryReceipts(), autoReceipt: autoReceipt}
	reports := &[]Problem{}
	rx := NewReceiver(ToMain, sess.receipts, sess.submit, func(p Problem) { *reports = append(*reports, p) })
	if res := rx.Scan(c); res != (ScanResult{}) {
		t.Fatalf("first scan of an empty inbox: %+v", res)
	}
	return c, lc, sess, rx, reports
}

// TestScanMovedSkipsTheListing: after a full scan, each message whose
// moved-in file carries the next sequence is delivered and acknowledged
// from its name alone, in order, without listing the inbox; a batch of
// names in publication order too.
func TestScanMovedSkipsTheListing(t *testing.T) {
	c, lc, sess, rx, reports := movedSetup(t, true)
	listed := lc.count()
	for _, text := range []string{"one", "two", "three"} {
		m := mustSend(t, c, ToMain, text)
		if res := rx.ScanMoved(c, []string{movedName(m)}); res != (ScanResult{Submitted: 1, Acknowledged: 1}) {
			t.Fatalf("ScanMoved of %q: %+v", text, res)
		}
	}
	batch, err := c.SendBatch(ToMain, []string{"four", "five"})
	if err != nil {
		t.Fatal(err)
	}
	if res := rx.ScanMoved(c, []string{movedName(batch[0]), movedName(batch[1])}); res != (ScanResult{Submitted: 2, Acknowledged: 2}) {
		t.Fatalf("ScanMoved of a batch: %+v", res)
	}
	if n := lc.count() - listed; n != 0 {
		t.Errorf("%d listings after the first scan, want none", n)
	}
	if diff := cmp.Diff([]string{"one", "two", "three", "four", "five"}, bodies(t, sess.got)); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	if names := inboxNames(t, c, ToMain); len(names) != 0 {
		t.Errorf("inbox after the receipts: %v", names)
	}
	if len(*reports) != 0 {
		t.Errorf("reports: %v", *reports)
	}
}

// TestScanMovedWithoutCursorLists: with no full scan before it (a
// receiver's first wake), ScanMoved lists the inbox, and so finds a
// message whose event it was not given.
func TestScanMovedWithoutCursorLists(t *testing.T) {
	c := newTestChannel(t)
	lc := &listCounter{}
	lc.install(c)
	sess := &session{receipts: NewMemoryReceipts(), autoReceipt: true}
	rx := NewReceiver(ToMain, sess.receipts, sess.submit, nil)
	mustSend(t, c, ToMain, "one")
	two := mustSend(t, c, ToMain, "two")
	if res := rx.ScanMoved(c, []string{movedName(two)}); res.Submitted != 2 || lc.count() == 0 {
		t.Fatalf("first ScanMoved %+v after %d listings, want both delivered by a listing", res, lc.count())
	}
	if diff := cmp.Diff([]string{"one", "two"}, bodies(t, sess.got)); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

// TestScanMovedFallsBack: every case ScanMoved cannot vouch for is left to
// a full scan (it lists the inbox), and the messages still arrive in
// sequence order, each once; the fast path resumes after a clean scan.
func TestScanMovedFallsBack(t *testing.T) {
	t.Run("gap", func(t *testing.T) {
		// A restarted writer skips the rest of its reservation.
		c, lc, sess, rx, _ := movedSetup(t, true)
		one := mustSend(t, c, ToMain, "one")
		rx.ScanMoved(c, []string{movedName(one)})
		w := reopen(t, c)
		two := mustSend(t, w, ToMain, "two")
		if two.Sequence == one.Sequence+1 {
			t.Fatalf("no gap: sequences %d, %d", one.Sequence, two.Sequence)
		}
		listed := lc.count()
		if res := rx.ScanMoved(c, []string{movedName(two)}); res.Submitted != 1 || lc.count() == listed {
			t.Fatalf("ScanMoved over a gap: %+v, listed %d times, want a listing", res, lc.count()-listed)
		}
		listed = lc.count()
		three := mustSend(t, w, ToMain, "three")
		if res := rx.ScanMoved(c, []string{movedName(three)}); res.Submitted != 1 || lc.count() != listed {
			t.Fatalf("ScanMoved after the gap: %+v, listed %d times, want none", res, lc.count()-listed)
		}
		if diff := cmp.Diff([]string{"one", "two", "three"}, bodies(t, sess.got)); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
	})
	t.Run("out of order", func(t *testing.T) {
		// Events naming the later message first: the listing orders them.
		c, lc, sess, rx, _ := movedSetup(t, true)
		one, two := mustSend(t, c, ToMain, "one"), mustSend(t, c, ToMain, "two")
		listed := lc.count()
		if res := rx.ScanMoved(c, []string{movedName(two), movedName(one)}); res.Submitted != 2 || lc.count() == listed {
			t.Fatalf("ScanMoved out of order: %+v, want both by a listing", res)
		}
		if diff := cmp.Diff([]string{"one", "two"}, bodies(t, sess.got)); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
	})
	t.Run("a name not given", func(t *testing.T) {
		// One message's event went missing (or is still queued): the next
		// one's sequence is past the cursor.
		c, lc, sess, rx, _ := movedSetup(t, true)
		mustSend(t, c, ToMain, "one")
		two := mustSend(t, c, ToMain, "two")
		listed := lc.count()
		if res := rx.ScanMoved(c, []string{movedName(two)}); res.Submitted != 2 || lc.count() == listed {
			t.Fatalf("ScanMoved: %+v, want both by a listing", res)
		}
		if diff := cmp.Diff([]string{"one", "two"}, bodies(t, sess.got)); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
	})
	t.Run("unknown and vanished names", func(t *testing.T) {
		c, lc, sess, rx, _ := movedSetup(t, true)
		one := mustSend(t, c, ToMain, "one")
		for _, name := range []string{"no-such-message.json", "one.tmp"} {
			listed := lc.count()
			if res := rx.ScanMoved(c, []string{name}); lc.count() == listed {
				t.Fatalf("ScanMoved(%q): %+v without a listing", name, res)
			}
		}
		if diff := cmp.Diff([]string{"one"}, bodies(t, sess.got)); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
		// Its file is gone (acknowledged by the scans above).
		listed := lc.count()
		if res := rx.ScanMoved(c, []string{movedName(one)}); res.Submitted != 0 || lc.count() == listed {
			t.Fatalf("ScanMoved of an acknowledged message: %+v", res)
		}
	})
	t.Run("corrupt file", func(t *testing.T) {
		// Reported once, kept on disk, and no obstacle to what follows.
		c, lc, sess, rx, reports := movedSetup(t, true)
		bad := filepath.Join(c.Dir(), string(ToMain), "garbage.json")
		if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		listed := lc.count()
		rx.ScanMoved(c, []string{"garbage.json"})
		if lc.count() == listed || len(*reports) != 1 || (*reports)[0].Path != bad {
			t.Fatalf("corrupt file: listed %d times, reports %v", lc.count()-listed, *reports)
		}
		listed = lc.count()
		for _, text := range []string{"one", "two"} {
			m := mustSend(t, c, ToMain, text)
			if res := rx.ScanMoved(c, []string{movedName(m)}); res.Submitted != 1 {
				t.Fatalf("ScanMoved of %q beside the corrupt file: %+v", text, res)
			}
		}
		if lc.count() != listed {
			t.Errorf("%d listings beside a corrupt file already reported, want none", lc.count()-listed)
		}
		rx.Scan(c)
		if len(*reports) != 1 {
			t.Errorf("reports after another full scan: %v, want the corrupt file once", *reports)
		}
		if _, err := os.Stat(bad); err != nil {
			t.Errorf("the corrupt file is gone: %v", err)
		}
		if diff := cmp.Diff([]string{"one", "two"}, bodies(t, sess.got)); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
	})
	t.Run("replay", func(t *testing.T) {
		// A new file reusing a delivered sequence is refused and set aside
		// by the full scan; the next message is delivered after it.
		c, lc, sess, rx, reports := movedSetup(t, true)
		for _, text := range []string{"one", "two"} {
			m := mustSend(t, c, ToMain, text)
			rx.ScanMoved(c, []string{movedName(m)})
		}
		forged := forgeReplay(t, c, ToMain, 1)
		listed := lc.count()
		if res := rx.ScanMoved(c, []string{filepath.Base(forged)}); res.Submitted != 0 || lc.count() == listed {
			t.Fatalf("ScanMoved of a replay: %+v, listed %d times", res, lc.count()-listed)
		}
		if len(*reports) != 1 || !strings.Contains((*reports)[0].Error(), "already delivered") {
			t.Fatalf("reports %v, want the replay once", *reports)
		}
		if _, err := os.Stat(forged + AsideSuffix); err != nil {
			t.Errorf("the replay is not set aside: %v", err)
		}
		three := mustSend(t, c, ToMain, "three")
		if res := rx.ScanMoved(c, []string{movedName(three)}); res.Submitted != 1 {
			t.Fatalf("ScanMoved after the replay: %+v", res)
		}
		if diff := cmp.Diff([]string{"one", "two", "three"}, bodies(t, sess.got)); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
	})
	t.Run("receipted id at the cursor", func(t *testing.T) {
		// A file with the id of a delivered message and the next sequence
		// is acknowledged by the full scan, never delivered twice.
		c, lc, sess, rx, _ := movedSetup(t, true)
		one := mustSend(t, c, ToMain, "one")
		rx.ScanMoved(c, []string{movedName(one)})
		msg, err := encodeJSON(wireMessage{Version: 1, ID: one.ID, Sequence: one.Sequence + 1, RunID: c.Manifest().RunID,
			Token: c.Manifest().Token, CreatedAt: one.CreatedAt, Message: "one again"})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.Dir(), string(ToMain), movedName(one)), msg, 0o600); err != nil {
			t.Fatal(err)
		}
		listed := lc.count()
		if res := rx.ScanMoved(c, []string{movedName(one)}); res.Submitted != 0 || lc.count() == listed {
			t.Fatalf("ScanMoved of a receipted id: %+v", res)
		}
		if diff := cmp.Diff([]string{"one"}, bodies(t, sess.got)); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
	})
}

// TestScanMovedKeepsReleasedMessagesFirst: receipts come later, as in a Pi
// session. ScanMoved delivers the next message while the one before is in
// flight, but once that one is released (the session dropped it) it must
// be offered again before anything after it: the release drops the cursor.
func TestScanMovedKeepsReleasedMessagesFirst(t *testing.T) {
	c, lc, sess, rx, reports := movedSetup(t, false)
	one, two := mustSend(t, c, ToMain, "one"), mustSend(t, c, ToMain, "two")
	listed := lc.count()
	for _, m := range []Message{one, two} {
		if res := rx.ScanMoved(c, []string{movedName(m)}); res != (ScanResult{Submitted: 1, Waiting: 1}) {
			t.Fatalf("ScanMoved of %q: %+v", m.Text, res)
		}
	}
	if lc.count() != listed {
		t.Fatalf("%d listings with receipts pending, want none", lc.count()-listed)
	}
	rx.Release(one.Receipt())
	three := mustSend(t, c, ToMain, "three")
	if res := rx.ScanMoved(c, []string{movedName(three)}); res.Submitted != 2 || lc.count() == listed {
		t.Fatalf("ScanMoved after a release: %+v, want the released message and the new one by a listing", res)
	}
	if diff := cmp.Diff([]string{"one", "two", "one", "three"}, bodies(t, sess.got)); diff != "" {
		t.Errorf("submissions (-want +got):\n%s", diff)
	}
	for _, m := range []Message{one, two, three} {
		if err := sess.receipts.Record(m.Receipt()); err != nil {
			t.Fatal(err)
		}
	}
	if res := rx.Scan(c); res.Acknowledged != 3 || len(*reports) != 0 {
		t.Fatalf("scan after the receipts: %+v, reports %v", res, *reports)
	}
}

// TestScanMovedNamesInFlightAsWaiting: message one is in flight (its
// receipt pending) when two is receipted at once. Raising the delivered
// mark to two must name one as waiting, or one, released afterwards, would
// be refused as a replay: ScanMoved leaves that to the full scan.
func TestScanMovedNamesInFlightAsWaiting(t *testing.T) {
	c := newTestChannel(t)
	store := NewMemoryReceipts()
	sess := &pickySession{receipts: store, refuse: map[string]bool{"one": true}}
	var reports []Problem
	rx := NewReceiver(ToMain, store, sess.submit, func(p Problem) { reports = append(reports, p) })
	rx.Scan(c)
	one, two := mustSend(t, c, ToMain, "one"), mustSend(t, c, ToMain, "two")
	rx.ScanMoved(c, []string{movedName(one)})
	if res := rx.ScanMoved(c, []string{movedName(two)}); res.Submitted != 1 || res.Acknowledged != 1 {
		t.Fatalf("ScanMoved of two: %+v", res)
	}
	rx.Release(one.Receipt())
	sess.refuse = nil
	if res := rx.Scan(c); res.Submitted != 1 || res.Acknowledged != 1 || len(reports) != 0 {
		t.Fatalf("scan after releasing one: %+v, reports %v: one must be delivered, not refused", res, reports)
	}
	if diff := cmp.Diff([]string{"one", "two", "one"}, sess.got); diff != "" {
		t.Errorf("submissions (-want +got):\n%s", diff)
	}
	if names := inboxNames(t, c, ToMain); len(names) != 0 {
		t.Errorf("inbox: %v", names)
	}
}

// TestScanMovedFailedSubmission: a submission that fails on the fast path
// is reported once and stops the batch; the message is offered again,
// before the later ones, by the next scan.
func TestScanMovedFailedSubmission(t *testing.T) {
	c, _, sess, rx, reports := movedSetup(t, true)
	one, two := mustSend(t, c, ToMain, "one"), mustSend(t, c, ToMain, "two")
	sess.fail = errors.New("session busy")
	if res := rx.ScanMoved(c, []string{movedName(one), movedName(two)}); res.Submitted != 0 || res.Problems != 1 {
		t.Fatalf("failing ScanMoved: %+v", res)
	}
	if len(*reports) != 1 {
		t.Fatalf("reports %v, want the failure once", *reports)
	}
	sess.fail = nil
	three := mustSend(t, c, ToMain, "three")
	if res := rx.ScanMoved(c, []string{movedName(three)}); res.Submitted != 3 {
		t.Fatalf("ScanMoved after the failure: %+v", res)
	}
	if diff := cmp.Diff([]string{"one", "two", "three"}, bodies(t, sess.got)); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

// TestScanMovedRestoreDropsCursor: messages restored as in flight (a
// reloaded bridge) have no known sequence, so the next wake lists. The
// receipts come later, as in a session: a receipt at once would leave the
// acknowledgement to a full scan anyway, with another message in flight.
func TestScanMovedRestoreDropsCursor(t *testing.T) {
	c, lc, sess, rx, _ := movedSetup(t, false)
	rx.Restore([]Receipt{{Direction: ToMain, RunID: c.Manifest().RunID, MessageID: "restored"}})
	one := mustSend(t, c, ToMain, "one")
	listed := lc.count()
	if res := rx.ScanMoved(c, []string{movedName(one)}); res.Submitted != 1 || lc.count() == listed {
		t.Fatalf("ScanMoved after a restore: %+v, want a listing", res)
	}
	if diff := cmp.Diff([]string{"one"}, bodies(t, sess.got)); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

package channel

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// forgeReplay writes a new message file with a fresh id but the given
// sequence, in every other way valid (right run id, direction and owner):
// what a replay of an old sequence looks like on disk.
func forgeReplay(t *testing.T, c *Channel, d Direction, seq int64) string {
	t.Helper()
	sent, err := c.Send(d, "forged")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.Dir(), string(d), Safe(sent.ID)+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"sequence":\s*` + strconv.FormatInt(sent.Sequence, 10) + `\b`)
	if !re.Match(data) {
		t.Fatalf("cannot find sequence %d in %s", sent.Sequence, data)
	}
	if err := os.WriteFile(path, re.ReplaceAll(data, []byte(`"sequence": `+strconv.FormatInt(seq, 10))), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReceiverRejectsSequenceRegression: after sequence 1 was delivered, a
// new file with a new id but sequence 1 is refused, reported once (naming
// the lost-counter cause) and moved aside, kept on disk but out of the
// inbox, so the channel is no longer retained; a receiver restarted over
// the same receipt log refuses the next replay too; later messages still
// arrive.
func TestReceiverRejectsSequenceRegression(t *testing.T) {
	c := newTestChannel(t)
	log := filepath.Join(t.TempDir(), "receipts.jsonl")
	store, err := OpenFileReceipts(log)
	if err != nil {
		t.Fatal(err)
	}
	sess := &session{receipts: store, autoReceipt: true}
	var reports []Problem
	rx := NewReceiver(ToMain, store, sess.submit, func(p Problem) { reports = append(reports, p) })
	if _, err := c.Send(ToMain, "one"); err != nil {
		t.Fatal(err)
	}
	if res := rx.Scan(c); res.Submitted != 1 || res.Acknowledged != 1 {
		t.Fatalf("first scan %+v", res)
	}
	forged := forgeReplay(t, c, ToMain, 1)
	for i := 0; i < 3; i++ {
		want := 0 // reported by the scan that moves it aside, then gone
		if i == 0 {
			want = 1
		}
		if res := rx.Scan(c); res.Submitted != 0 || res.Problems != want {
			t.Fatalf("scan %d after the replay: %+v", i, res)
		}
	}
	aside := forged + AsideSuffix
	if len(reports) != 1 || reports[0].Path != aside || !strings.Contains(reports[0].Error(), "sequence 1") ||
		!strings.Contains(reports[0].Error(), "lost its counter") {
		t.Fatalf("reports = %v, want one naming %s and the lost-counter cause", reports, aside)
	}
	if _, err := os.Stat(aside); err != nil {
		t.Fatalf("the rejected file is gone: %v", err)
	}
	if n := inboxNames(t, c, ToMain); len(n) != 1 || n[0] != filepath.Base(aside) {
		t.Fatalf("inbox %v, want only the file moved aside", n)
	}
	if left, _, _ := c.Pending(ToMain); len(left) != 0 {
		t.Fatalf("still pending: %v", left)
	}
	if rep, err := Inspect(c.Dir()); err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], filepath.Base(aside)) {
		t.Fatalf("inspect problems %v, %v: want the file moved aside", rep.Problems, err)
	}
	if len(sess.got) != 1 {
		t.Fatalf("delivered %d messages, want only the first", len(sess.got))
	}

	// A restarted receiver reads the mark back from the receipt log.
	store.Close()
	store, err = OpenFileReceipts(log)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sess2 := &session{receipts: store, autoReceipt: true}
	reports = nil
	rx = NewReceiver(ToMain, store, sess2.submit, func(p Problem) { reports = append(reports, p) })
	forgeReplay(t, c, ToMain, 1)
	if _, err := c.Send(ToMain, "three"); err != nil {
		t.Fatal(err)
	}
	if res := rx.Scan(c); res.Submitted != 1 || res.Problems != 1 || len(reports) != 1 {
		t.Fatalf("restarted scan %+v, reports %v", res, reports)
	}
	if len(sess2.got) != 1 || !strings.HasSuffix(sess2.got[0], "three") {
		t.Fatalf("restarted receiver delivered %q, want only \"three\"", sess2.got)
	}
	// Nothing refused retains the channel.
	if err := c.Remove(); err != nil {
		t.Fatalf("remove after the replays were moved aside: %v", err)
	}
}

// TestReceiverHoldsDuplicateSequenceInFlight: two new files with one
// sequence in the same scan: only the first is submitted, the second waits
// and is refused once the first is delivered.
func TestReceiverHoldsDuplicateSequenceInFlight(t *testing.T) {
	c := newTestChannel(t)
	if _, err := c.Send(ToMain, "one"); err != nil {
		t.Fatal(err)
	}
	forgeReplay(t, c, ToMain, 1)
	sess := &session{receipts: NewMemoryReceipts()} // receipts come later
	rx := NewReceiver(ToMain, sess.receipts, sess.submit, nil)
	for range 2 {
		if res := rx.Scan(c); len(sess.got) != 1 || res.Problems != 0 {
			t.Fatalf("scan %+v, %d submitted, want one submitted and one waiting", res, len(sess.got))
		}
	}
	r, _, err := ParseDeliveryHeader(sess.got[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.receipts.Record(r); err != nil {
		t.Fatal(err)
	}
	if res := rx.Scan(c); res.Acknowledged != 1 || res.Submitted != 0 || res.Problems != 1 {
		t.Fatalf("after the receipt %+v, want the first acknowledged and the second refused", res)
	}
	if n := inboxNames(t, c, ToMain); len(n) != 1 || !strings.HasSuffix(n[0], AsideSuffix) {
		t.Fatalf("inbox %v, want the refused file moved aside", n)
	}
}

// pickySession records the receipt of every submitted message except those
// whose text is in refuse: those stay in flight, like a follow-up the
// session queued and later dropped.
type pickySession struct {
	receipts ReceiptStore
	refuse   map[string]bool
	got      []string
}

func (s *pickySession) submit(d Delivery) error {
	s.got = append(s.got, d.Message.Text)
	if s.refuse[d.Message.Text] {
		return nil
	}
	return s.receipts.Record(d.Message.Receipt())
}

// TestReceiverRetriesReleasedMessageBelowInFlight: message 1 is released
// (the session refused it) while message 2 is still in flight; the retry of
// 1 is a legitimate delivery, not a regression.
func TestReceiverRetriesReleasedMessageBelowInFlight(t *testing.T) {
	c := newTestChannel(t)
	sent := []Message{mustSend(t, c, ToMain, "one"), mustSend(t, c, ToMain, "two")}
	sess := &session{receipts: NewMemoryReceipts()} // receipts come later
	var reports []Problem
	rx := NewReceiver(ToMain, sess.receipts, sess.submit, func(p Problem) { reports = append(reports, p) })
	if res := rx.Scan(c); res.Submitted != 2 {
		t.Fatalf("first scan %+v", res)
	}
	rx.Release(sent[0].Receipt())
	if res := rx.Scan(c); res.Submitted != 1 || res.Problems != 0 || len(reports) != 0 {
		t.Fatalf("retry scan %+v, reports %v: the released message must be submitted again", res, reports)
	}
	for _, m := range sent {
		if err := sess.receipts.Record(m.Receipt()); err != nil {
			t.Fatal(err)
		}
	}
	if res := rx.Scan(c); res.Acknowledged != 2 || res.Problems != 0 {
		t.Fatalf("after the receipts %+v", res)
	}
}

// TestReceiverRetriesReleasedMessageBelowDelivered: message 2 is delivered
// (receipted) while message 1 is still in flight; 1 is then released and
// must still be delivered, also by a receiver restarted over the same
// receipt log. A new file reusing sequence 1 or 2 afterwards is refused.
func TestReceiverRetriesReleasedMessageBelowDelivered(t *testing.T) {
	c := newTestChannel(t)
	sent := []Message{mustSend(t, c, ToMain, "one"), mustSend(t, c, ToMain, "two")}
	log := filepath.Join(t.TempDir(), "receipts.jsonl")
	store, err := OpenFileReceipts(log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { store.Close() }()
	sess := &pickySession{receipts: store, refuse: map[string]bool{"one": true}}
	var reports []Problem
	report := func(p Problem) { reports = append(reports, p) }
	rx := NewReceiver(ToMain, store, sess.submit, report)
	if res := rx.Scan(c); res.Submitted != 2 || res.Acknowledged != 1 {
		t.Fatalf("first scan %+v", res)
	}
	rx.Release(sent[0].Receipt())
	sess.refuse = nil
	if res := rx.Scan(c); res.Submitted != 1 || res.Acknowledged != 1 || len(reports) != 0 {
		t.Fatalf("retry scan %+v, reports %v: the released message must be delivered", res, reports)
	}
	if diff := cmp.Diff([]string{"one", "two", "one"}, sess.got); diff != "" {
		t.Fatalf("submissions (-want +got):\n%s", diff)
	}

	// The same, with the receiver restarted between the two deliveries.
	sent = append(sent, mustSend(t, c, ToMain, "three"), mustSend(t, c, ToMain, "four"))
	sess = &pickySession{receipts: store, refuse: map[string]bool{"three": true}}
	rx = NewReceiver(ToMain, store, sess.submit, report)
	if res := rx.Scan(c); res.Submitted != 2 || res.Acknowledged != 1 {
		t.Fatalf("scan before the restart %+v", res)
	}
	store.Close()
	if store, err = OpenFileReceipts(log); err != nil {
		t.Fatal(err)
	}
	sess = &pickySession{receipts: store}
	rx = NewReceiver(ToMain, store, sess.submit, report)
	if res := rx.Scan(c); res.Submitted != 1 || res.Acknowledged != 1 || len(reports) != 0 {
		t.Fatalf("restarted scan %+v, reports %v: the message left in flight must be delivered", res, reports)
	}
	if diff := cmp.Diff([]string{"three"}, sess.got); diff != "" {
		t.Fatalf("restarted submissions (-want +got):\n%s", diff)
	}

	// Replays of any delivered sequence are still refused.
	for _, m := range sent {
		forged := forgeReplay(t, c, ToMain, m.Sequence)
		if res := rx.Scan(c); res.Submitted != 0 || res.Problems != 1 {
			t.Fatalf("replay of sequence %d: %+v", m.Sequence, res)
		}
		if _, err := os.Stat(forged + AsideSuffix); err != nil {
			t.Fatal(err)
		}
	}
	if len(reports) != len(sent) {
		t.Fatalf("%d reports, want one per replay: %v", len(reports), reports)
	}
}

// TestReceiverHoldsDuplicateOfRestoredMessage: a reloaded receiver restores
// a message as in flight without knowing its sequence; a second file with
// that sequence still waits instead of being submitted, whichever of the
// two the inbox lists first.
func TestReceiverHoldsDuplicateOfRestoredMessage(t *testing.T) {
	for range 8 { // the inbox lists equal sequences by (random) file name
		c := newTestChannel(t)
		m, err := c.Send(ToMain, "one")
		if err != nil {
			t.Fatal(err)
		}
		forgeReplay(t, c, ToMain, m.Sequence)
		sess := &session{receipts: NewMemoryReceipts()}
		rx := NewReceiver(ToMain, sess.receipts, sess.submit, nil)
		rx.Restore([]Receipt{m.Receipt()})
		if res := rx.Scan(c); res.Submitted != 0 || res.Waiting != 2 {
			t.Fatalf("scan %+v, want both waiting behind the restored message", res)
		}
	}
}

// TestFileReceiptsSequenceLines: mark lines (with their waiting ids) load
// back; malformed ones are refused with the byte offset instead of being
// half-applied.
func TestFileReceiptsSequenceLines(t *testing.T) {
	const good = `{"direction":"to-main","runId":"r","messageId":"a"}` + "\n" +
		`{"direction":"to-main","runId":"r","sequence":5,"waiting":["b","c"]}` + "\n" +
		`{"direction":"to-main","runId":"r","messageId":"c"}` + "\n"
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFileReceipts(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		id      string
		waiting bool
	}{{"b", true}, {"c", false}, {"d", false}} {
		high, waiting, err := s.Delivered(Receipt{Direction: ToMain, RunID: "r", MessageID: tc.id})
		if err != nil || high != 5 || waiting != tc.waiting {
			t.Errorf("Delivered(%s) = %d, %v, %v; want 5, %v", tc.id, high, waiting, err, tc.waiting)
		}
	}
	for name, line := range map[string]string{
		"waiting on a receipt": `{"direction":"to-main","runId":"r","messageId":"a","waiting":["b"]}`,
		"empty waiting id":     `{"direction":"to-main","runId":"r","sequence":5,"waiting":[""]}`,
		"waiting not a list":   `{"direction":"to-main","runId":"r","sequence":5,"waiting":"b"}`,
	} {
		path := filepath.Join(t.TempDir(), "receipts.jsonl")
		if err := os.WriteFile(path, []byte(good+line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := OpenFileReceipts(path); err == nil {
			s.Close()
			t.Errorf("%s: log accepted", name)
		} else if !strings.Contains(err.Error(), "corrupt receipt at byte "+strconv.Itoa(len(good))) {
			t.Errorf("%s: error %v, want the byte offset %d", name, err, len(good))
		}
	}
}

// flakyReceipts fails Has for one message id while broken is set.
type flakyReceipts struct {
	*MemoryReceipts
	broken string
}

func (s *flakyReceipts) Has(r Receipt) (bool, error) {
	if r.MessageID == s.broken {
		return false, errors.New("receipt store unavailable")
	}
	return s.MemoryReceipts.Has(r)
}

// TestReceiverKeepsMarkWhileBelowUnknown: while the receipt of a message
// cannot be read, a later message's receipt does not raise the mark past
// it, so the earlier one is still delivered once the store recovers.
func TestReceiverKeepsMarkWhileBelowUnknown(t *testing.T) {
	c := newTestChannel(t)
	sent := []Message{mustSend(t, c, ToMain, "one"), mustSend(t, c, ToMain, "two")}
	store := &flakyReceipts{MemoryReceipts: NewMemoryReceipts()}
	sess := &session{receipts: store}
	rx := NewReceiver(ToMain, store, sess.submit, nil)
	if res := rx.Scan(c); res.Submitted != 2 {
		t.Fatalf("first scan %+v", res)
	}
	rx.Release(sent[0].Receipt()) // the session dropped "one"
	if err := store.Record(sent[1].Receipt()); err != nil {
		t.Fatal(err)
	}
	store.broken = sent[0].ID
	if res := rx.Scan(c); res.Acknowledged != 0 || res.Problems != 1 {
		t.Fatalf("scan with the store failing %+v, want nothing acknowledged", res)
	}
	store.broken = ""
	if res := rx.Scan(c); res.Acknowledged != 1 || res.Submitted != 1 || res.Problems != 0 {
		t.Fatalf("scan after recovery %+v, want \"two\" acknowledged and \"one\" delivered", res)
	}
}

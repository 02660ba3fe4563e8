package channel

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
// new file with a new id but sequence 1 is refused, reported once and kept
// on disk, also by a receiver restarted over the same receipt log; later
// messages still arrive.
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
		if res := rx.Scan(c); res.Submitted != 0 || res.Problems != 1 {
			t.Fatalf("scan %d after the replay: %+v", i, res)
		}
	}
	if len(reports) != 1 || reports[0].Path != forged || !strings.Contains(reports[0].Error(), "sequence 1") {
		t.Fatalf("reports = %v, want one naming %s", reports, forged)
	}
	if _, err := os.Stat(forged); err != nil {
		t.Fatalf("the rejected file is gone: %v", err)
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
	if _, err := c.Send(ToMain, "three"); err != nil {
		t.Fatal(err)
	}
	if res := rx.Scan(c); res.Submitted != 1 || res.Problems != 1 || len(reports) != 1 {
		t.Fatalf("restarted scan %+v, reports %v", res, reports)
	}
	if len(sess2.got) != 1 || !strings.HasSuffix(sess2.got[0], "three") {
		t.Fatalf("restarted receiver delivered %q, want only \"three\"", sess2.got)
	}
}

// TestReceiverRejectsDuplicateSequenceInFlight: two new files with one
// sequence in the same scan: only the first is submitted.
func TestReceiverRejectsDuplicateSequenceInFlight(t *testing.T) {
	c := newTestChannel(t)
	if _, err := c.Send(ToMain, "one"); err != nil {
		t.Fatal(err)
	}
	forgeReplay(t, c, ToMain, 1)
	sess := &session{receipts: NewMemoryReceipts()} // receipts come later
	rx := NewReceiver(ToMain, sess.receipts, sess.submit, nil)
	if res := rx.Scan(c); res.Submitted != 1 || res.Problems != 1 {
		t.Fatalf("scan %+v, want one submitted and one rejected", res)
	}
}

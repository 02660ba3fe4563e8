package channel

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// session is a fake receiving Pi: it records submitted texts and, when
// autoReceipt is set, records the receipt parsed back from the header the way
// the bridge does on message_end.
type session struct {
	receipts    ReceiptStore
	autoReceipt bool
	fail        error
	got         []string
}

func (s *session) submit(d Delivery) error {
	if s.fail != nil {
		return s.fail
	}
	text := d.Text()
	s.got = append(s.got, text)
	if s.autoReceipt {
		r, _, err := ParseDeliveryHeader(text)
		if err != nil {
			return err
		}
		return s.receipts.Record(r)
	}
	return nil
}

func TestReceiverDeliversInOrderAndAcknowledges(t *testing.T) {
	c := newTestChannel(t)
	for _, s := range []string{"one", "two", "three"} {
		if _, err := c.Send(ToMain, s); err != nil {
			t.Fatal(err)
		}
	}
	sess := &session{receipts: NewMemoryReceipts(), autoReceipt: true}
	rx := NewReceiver(ToMain, sess.receipts, sess.submit, nil)
	res := rx.Scan(c)
	if res.Submitted != 3 || res.Acknowledged != 3 {
		t.Fatalf("scan result %+v", res)
	}
	var bodies []string
	for _, g := range sess.got {
		_, body, err := ParseDeliveryHeader(g)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	if diff := cmp.Diff([]string{"one", "two", "three"}, bodies); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if n := inboxNames(t, c, ToMain); len(n) != 0 {
		t.Errorf("inbox after receipts: %v", n)
	}
}

func TestMessageStaysUntilReceipt(t *testing.T) {
	c := newTestChannel(t)
	m, err := c.Send(ToSub, "task")
	if err != nil {
		t.Fatal(err)
	}
	sess := &session{receipts: NewMemoryReceipts()}
	rx := NewReceiver(ToSub, sess.receipts, sess.submit, nil)
	rx.Scan(c)
	res := rx.Scan(c)
	if len(sess.got) != 1 {
		t.Fatalf("in-flight message submitted %d times", len(sess.got))
	}
	if res.Waiting != 1 || len(inboxNames(t, c, ToSub)) != 1 {
		t.Fatalf("message left the inbox before its receipt: %+v", res)
	}
	// A reloaded bridge that restores the in-flight ids does not resubmit.
	rx2 := NewReceiver(ToSub, sess.receipts, sess.submit, nil)
	rx2.Restore(rx.InFlight())
	rx2.Scan(c)
	if len(sess.got) != 1 {
		t.Fatalf("restored in-flight message resubmitted")
	}
	// Withdrawn (e.g. the session dropped its queue): retried.
	rx.Release(m.Receipt())
	rx.Scan(c)
	if len(sess.got) != 2 {
		t.Fatalf("released message not retried")
	}
	if err := sess.receipts.Record(m.Receipt()); err != nil {
		t.Fatal(err)
	}
	if res := rx.Scan(c); res.Acknowledged != 1 || len(inboxNames(t, c, ToSub)) != 0 {
		t.Fatalf("receipted message not removed: %+v", res)
	}
}

func TestFailedSubmissionStaysQueued(t *testing.T) {
	c := newTestChannel(t)
	for _, s := range []string{"a", "b"} {
		if _, err := c.Send(ToSub, s); err != nil {
			t.Fatal(err)
		}
	}
	var reports []string
	sess := &session{receipts: NewMemoryReceipts(), autoReceipt: true, fail: errors.New("no selected model")}
	rx := NewReceiver(ToSub, sess.receipts, sess.submit, func(p Problem) { reports = append(reports, p.Error()) })
	rx.Scan(c)
	rx.Scan(c)
	if len(reports) != 1 || !strings.Contains(reports[0], "no selected model") {
		t.Fatalf("reports %q, want the failure once", reports)
	}
	if len(inboxNames(t, c, ToSub)) != 2 {
		t.Fatal("failed messages left the inbox")
	}
	sess.fail = nil
	if res := rx.Scan(c); res.Submitted != 2 || res.Acknowledged != 2 {
		t.Fatalf("retry: %+v", res)
	}
}

func TestCorruptFileReportedOnceAndIsolated(t *testing.T) {
	broken := newTestChannel(t)
	healthy := newTestChannel(t)
	bad := filepath.Join(broken.Dir(), "to-main", "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := broken.Send(ToMain, "behind the corrupt file"); err != nil {
		t.Fatal(err)
	}
	var reports []string
	sess := &session{receipts: NewMemoryReceipts(), autoReceipt: true}
	rx := NewReceiver(ToMain, sess.receipts, sess.submit, func(p Problem) { reports = append(reports, p.Error()) })
	for i := range 3 {
		if _, err := healthy.Send(ToMain, "healthy"); err != nil {
			t.Fatal(err)
		}
		rx.Scan(broken)
		rx.Scan(healthy)
		if i == 1 {
			// A changed failure is a new failure.
			os.WriteFile(bad, []byte("[]"), 0o600)
		}
	}
	if len(reports) != 2 {
		t.Errorf("reports: %q, want one per distinct failure", reports)
	}
	if len(sess.got) != 4 {
		t.Errorf("delivered %d messages, want 4 (1 from the broken channel, 3 healthy)", len(sess.got))
	}
	if _, err := os.Stat(bad); err != nil {
		t.Errorf("corrupt file not kept for inspection: %v", err)
	}
	// A removed channel is one more problem, not a stop.
	os.RemoveAll(broken.Dir())
	if res := rx.Scan(broken); res.Problems != 1 {
		t.Errorf("removed channel: %+v", res)
	}
}

func TestFileReceiptsDropTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	s, err := OpenFileReceipts(path)
	if err != nil {
		t.Fatal(err)
	}
	a := Receipt{Direction: ToMain, RunID: "r", MessageID: "a"}
	if err := s.Record(a); err != nil {
		t.Fatal(err)
	}
	s.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"direction":"to-main","runId":"r","mess`)
	f.Close()
	s, err = OpenFileReceipts(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := Receipt{Direction: ToMain, RunID: "r", MessageID: "b"}
	if err := s.Record(b); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenFileReceipts(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, r := range []Receipt{a, b} {
		if ok, _ := s2.Has(r); !ok {
			t.Errorf("receipt %q lost", r.MessageID)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"receiptLog":2}` + "\n" + `{"direction":"to-main","runId":"r","messageId":"a"}` + "\n" + `{"direction":"to-main","runId":"r","messageId":"b"}` + "\n"
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("receipt log (-want +got):\n%s", diff)
	}
}

// TestReceiptLogFormat: a new log names its format on its first line; a
// log of a newer format is refused as written by a newer facets (not as
// corrupt) and left as it was; a log without the line (written before
// formats were named) still opens.
func TestReceiptLogFormat(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.jsonl")
	s, err := OpenFileReceipts(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b, _ := os.ReadFile(path); string(b) != `{"receiptLog":2}`+"\n" {
		t.Errorf("new log = %q", b)
	}
	newer := filepath.Join(dir, "newer.jsonl")
	data := `{"receiptLog":3}` + "\n" + `{"direction":"to-main","runId":"r","messageId":"a","acked":"2026-01-01"}` + "\n"
	os.WriteFile(newer, []byte(data), 0o600)
	_, err = OpenFileReceipts(newer)
	if !errors.Is(err, ErrNewerReceiptLog) || !strings.Contains(err.Error(), "written by a newer facets") || !strings.Contains(err.Error(), newer) {
		t.Errorf("newer log: err = %v", err)
	}
	if b, _ := os.ReadFile(newer); string(b) != data {
		t.Errorf("newer log changed: %q", b)
	}
	old := filepath.Join(dir, "old.jsonl")
	os.WriteFile(old, []byte(`{"direction":"to-sub","runId":"r","sequence":4}`+"\n"), 0o600)
	s, err = OpenFileReceipts(old)
	if err != nil {
		t.Fatalf("a log without a format line: %v", err)
	}
	defer s.Close()
	if high, _, _ := s.Delivered(Receipt{Direction: ToSub, RunID: "r"}); high != 4 {
		t.Errorf("mark = %d, want 4", high)
	}
}

// bodies returns the message texts of delivered user messages.
func bodies(t *testing.T, got []string) []string {
	t.Helper()
	var out []string
	for _, g := range got {
		_, body, err := ParseDeliveryHeader(g)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, body)
	}
	return out
}

// A listing that misses a message renamed in while readdir ran, yet shows
// a later one, leaves a gap above the delivered mark: the scan lists again
// instead of delivering the later one first (which would refuse the
// earlier one as a replay). A listing without a gap is listed once.
func TestScanListsAgainOnlyAfterAGap(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hide      bool // the first listing misses the second message
		wantLists int
	}{
		{"gap", true, 2},
		{"no gap", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestChannel(t)
			sess := &session{receipts: NewMemoryReceipts(), autoReceipt: true}
			var problems []Problem
			rx := NewReceiver(ToMain, sess.receipts, sess.submit, func(p Problem) { problems = append(problems, p) })
			mustSend(t, c, ToMain, "one")
			rx.Scan(c) // delivered mark 1
			two := mustSend(t, c, ToMain, "two")
			mustSend(t, c, ToMain, "three")
			lists := 0
			c.list = func(dir *os.File) ([]string, error) {
				lists++
				names, err := listNames(dir)
				if lists == 1 && tc.hide {
					names = slices.DeleteFunc(names, func(n string) bool { return n == two.ID+".json" })
				}
				return names, err
			}
			rx.Scan(c)
			if diff := cmp.Diff([]string{"one", "two", "three"}, bodies(t, sess.got)); diff != "" {
				t.Errorf("delivered (-want +got):\n%s", diff)
			}
			if len(problems) != 0 {
				t.Errorf("problems: %v", problems)
			}
			if lists != tc.wantLists {
				t.Errorf("listed the inbox %d times, want %d", lists, tc.wantLists)
			}
		})
	}
}

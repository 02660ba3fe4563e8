package channel

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestPrinterLimitAndReceipts: a Printer with a limit prints that many
// deliveries as JSON lines, records each receipt after its line, calls done
// once, and leaves the rest queued without reporting them as problems.
func TestPrinterLimitAndReceipts(t *testing.T) {
	c := newTestChannel(t)
	for _, text := range []string{"one", "two", "three"} {
		mustSend(t, c, ToMain, text)
	}
	var out, errw bytes.Buffer
	receipts := NewMemoryReceipts()
	dones := 0
	p := NewPrinter(&out, &errw, receipts, 2, func() { dones++ })
	NewReceiver(ToMain, receipts, p.Submit, p.Report).Scan(c)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("printed %d lines, want 2:\n%s", len(lines), out.String())
	}
	for i, want := range []string{"one", "two"} {
		var l DeliveryLine
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil || l.Message != want || !strings.HasPrefix(l.Text, DeliveryPrefix) {
			t.Errorf("line %d = %q (%v), want %q with its delivery header", i, lines[i], err, want)
		}
		if ok, _ := receipts.Has(Receipt{Direction: ToMain, RunID: l.RunID, MessageID: l.MessageID}); !ok {
			t.Errorf("no receipt for printed message %q", want)
		}
	}
	if dones != 1 || p.Problems() != 0 || errw.Len() != 0 {
		t.Errorf("done called %d times, %d problems (%q); want 1 and none", dones, p.Problems(), errw.String())
	}
	queued, _, err := c.Pending(ToMain)
	if got := texts(queued); err != nil || len(got) != 1 || got[0] != "three" {
		t.Errorf("queued after the limit = %q (%v), want [three]", got, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errTestWrite }

var errTestWrite = errorString("stdout is gone")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestPrinterRecordsNothingItCouldNotPrint: a delivery whose line cannot
// be written gets no receipt and stays in the inbox.
func TestPrinterRecordsNothingItCouldNotPrint(t *testing.T) {
	c := newTestChannel(t)
	m := mustSend(t, c, ToMain, "kept")
	var errw bytes.Buffer
	receipts := NewMemoryReceipts()
	p := NewPrinter(failingWriter{}, &errw, receipts, 0, nil)
	NewReceiver(ToMain, receipts, p.Submit, p.Report).Scan(c)
	if ok, _ := receipts.Has(m.Receipt()); ok {
		t.Error("a message that was not printed has a receipt")
	}
	if queued, _, _ := c.Pending(ToMain); len(queued) != 1 {
		t.Errorf("inbox holds %d messages, want the unprinted one", len(queued))
	}
	if p.Problems() != 1 || !strings.Contains(errw.String(), "stdout is gone") {
		t.Errorf("problems %d, stderr %q; want the write failure reported", p.Problems(), errw.String())
	}
}

package channel

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// referenceSend writes one message the way the TypeScript Facets does: read
// the counter, take the next number, write the message file, then store
// that number, the last one used, as the counter.
func referenceSend(t *testing.T, c *Channel, d Direction, text string) int64 {
	t.Helper()
	last, err := c.Sequence(d)
	if err != nil {
		t.Fatal(err)
	}
	seq := last + 1
	id := NewID()
	msg, err := encodeJSON(wireMessage{Version: 1, ID: id, Sequence: seq, RunID: c.Manifest().RunID,
		Token: c.Manifest().Token, CreatedAt: time.Now().UnixMilli(), Message: text})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir(), string(d), id+".json"), msg, 0o600); err != nil {
		t.Fatal(err)
	}
	counter, err := encodeJSON(sequenceRecord{RunID: c.Manifest().RunID, Token: c.Manifest().Token, Sequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir(), sequenceFile(d)), counter, 0o600); err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestMixedWritersOrder: this package stores a reservation (the highest
// number it may use) as the counter, the TypeScript Facets the last number
// it used. Both read the counter before every send and only ever go above
// it, so writers taking turns on one direction keep a strictly increasing
// order; what changes is only that the reference's next number skips the
// rest of a Go reservation (a gap, which both readers accept), and a Go
// writer that finds the counter moved drops its reservation.
func TestMixedWritersOrder(t *testing.T) {
	goWriter := newTestChannel(t)
	goWriter.reserve = 4
	var want []string
	goSend := func(s string) {
		t.Helper()
		if _, err := goWriter.Send(ToMain, s); err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	refSend := func(s string) int64 {
		t.Helper()
		want = append(want, s)
		return referenceSend(t, goWriter, ToMain, s)
	}
	goSend("go1") // sequence 1, counter 5 (reserved up to 5)
	if seq := refSend("ts1"); seq != 6 {
		t.Errorf("the reference writer took %d after a Go reservation up to 5, want 6", seq)
	}
	goSend("go2") // counter moved to 6: 7, not 2 from the old reservation
	goSend("go3")
	refSend("ts2")
	refSend("ts3")
	goSend("go4")
	got, bad, err := goWriter.Pending(ToMain)
	if err != nil || len(bad) > 0 {
		t.Fatalf("Pending: %v %v", err, bad)
	}
	if diff := cmp.Diff(want, texts(got)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	var seqs []string
	for i, m := range got {
		seqs = append(seqs, strconv.FormatInt(m.Sequence, 10))
		if i > 0 && m.Sequence <= got[i-1].Sequence {
			t.Errorf("sequence %d after %d", m.Sequence, got[i-1].Sequence)
		}
	}
	t.Logf("sequences: %v", seqs)
}

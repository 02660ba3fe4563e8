package channel

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSendBatchDeliversInOrder sends several messages in one batch: they
// get consecutive sequence numbers and are read back in order, with the ids
// SendBatch returned.
func TestSendBatchDeliversInOrder(t *testing.T) {
	c := newTestChannel(t)
	in := []string{"one", "two", "three", "four", "five"}
	sent, err := c.SendBatch(ToSub, in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, texts(sent)); diff != "" {
		t.Fatalf("returned (-want +got):\n%s", diff)
	}
	for i := 1; i < len(sent); i++ {
		if sent[i].Sequence != sent[i-1].Sequence+1 {
			t.Errorf("sequences not consecutive: %d then %d", sent[i-1].Sequence, sent[i].Sequence)
		}
	}
	queued, problems, err := c.Pending(ToSub)
	if err != nil || len(problems) != 0 {
		t.Fatalf("pending: %v %v", err, problems)
	}
	if diff := cmp.Diff(in, texts(queued)); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}
	for i := range queued {
		if queued[i].ID != sent[i].ID || queued[i].Sequence != sent[i].Sequence {
			t.Errorf("message %d: queued %s/%d, sent %s/%d", i, queued[i].ID, queued[i].Sequence, sent[i].ID, sent[i].Sequence)
		}
	}
}

// TestSendBatchPartialFailure fails one step of a five-message batch. What
// SendBatch returns must be exactly what was published, in order; nothing
// else may be visible, no temp file may stay, and a later send must arrive
// after the published prefix with a fresh sequence number (a gap is fine,
// a reused number is not).
func TestSendBatchPartialFailure(t *testing.T) {
	in := []string{"a", "b", "c", "d", "e"}
	cases := []struct {
		name string
		op   string // the step that fails
		nth  int    // on its nth call for a payload (1-based); 0 means the inbox fsync
		want []string
	}{
		{name: "third rename fails", op: "rename", nth: 3, want: []string{"a", "b"}},
		{name: "first rename fails", op: "rename", nth: 1, want: nil},
		{name: "a temp file cannot be written", op: "write", nth: 2, want: nil},
		{name: "a temp file cannot be fsynced", op: "sync", nth: 4, want: nil},
		{name: "inbox fsync fails after publishing", op: "sync-dir", nth: 0, want: in},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestChannel(t)
			inboxDir := filepath.Join(c.Dir(), string(ToSub))
			var mu sync.Mutex // temp files are created concurrently
			calls := 0
			c.fault = func(op, name string) error {
				if op != tc.op {
					return nil
				}
				if tc.nth == 0 {
					if name == inboxDir {
						return syscall.ENOSPC
					}
					return nil
				}
				if !strings.HasSuffix(name, ".json") || strings.HasSuffix(name, "sequence.json") {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls == tc.nth {
					return syscall.ENOSPC
				}
				return nil
			}
			sent, err := c.SendBatch(ToSub, in)
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "send to "+c.Dir()) {
				t.Fatalf("err = %v, want ENOSPC naming the channel", err)
			}
			if diff := cmp.Diff(tc.want, texts(sent)); diff != "" {
				t.Errorf("returned as published (-want +got):\n%s", diff)
			}
			c.fault = nil
			queued, problems, err := c.Pending(ToSub)
			if err != nil || len(problems) != 0 {
				t.Fatalf("pending: %v %v", err, problems)
			}
			if diff := cmp.Diff(tc.want, texts(queued)); diff != "" {
				t.Errorf("visible in the inbox (-want +got):\n%s", diff)
			}
			if left := tempFiles(t, c, ToSub); len(left) != 0 {
				t.Errorf("temp files left behind: %v", left)
			}
			after, err := c.Send(ToSub, "after")
			if err != nil {
				t.Fatalf("send after the failure: %v", err)
			}
			if n := len(sent); n > 0 && after.Sequence <= sent[n-1].Sequence {
				t.Errorf("sequence %d reused after %d", after.Sequence, sent[n-1].Sequence)
			}
			queued, _, _ = c.Pending(ToSub)
			if diff := cmp.Diff(append(tc.want, "after"), texts(queued)); diff != "" {
				t.Errorf("queue after a new send (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSendBatchOversizedWritesNothing: one message over the limit fails the
// whole batch before any file is written.
func TestSendBatchOversizedWritesNothing(t *testing.T) {
	c := newTestChannel(t)
	before, err := c.Sequence(ToSub)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := c.SendBatch(ToSub, []string{"ok", strings.Repeat("x", MaxMessageBytes), "ok too"})
	if err == nil || !strings.Contains(err.Error(), "message 1") || len(sent) != 0 {
		t.Fatalf("SendBatch = %d messages, %v; want an error naming message 1", len(sent), err)
	}
	if names := inboxNames(t, c, ToSub); len(names) != 0 {
		t.Errorf("inbox not empty: %v", names)
	}
	if after, _ := c.Sequence(ToSub); after != before {
		t.Errorf("sequence counter written: %d -> %d", before, after)
	}
}

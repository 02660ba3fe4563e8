package channel

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestConcurrentWritersKeepSequenceOrder runs several writers of one
// direction at once, each with its own handle (its own inbox descriptor,
// flock and sequence lease, as separate processes have), restarting
// midway, while a receiver scans the inbox. Every writer publishes in
// sequence order, so the receiver never sees a message below one it
// already delivered: nothing is refused, everything is delivered once and
// in increasing sequence.
func TestConcurrentWritersKeepSequenceOrder(t *testing.T) {
	c := newTestChannel(t)
	const writers, rounds = 4, 40
	store := NewMemoryReceipts()
	var mu sync.Mutex
	var delivered []Message
	var problems []Problem
	submit := func(d Delivery) error {
		mu.Lock()
		delivered = append(delivered, d.Message)
		mu.Unlock()
		return store.Record(d.Message.Receipt())
	}
	rx := NewReceiver(ToMain, store, submit, func(p Problem) {
		mu.Lock()
		problems = append(problems, p)
		mu.Unlock()
	})

	sent := make(chan Message, writers*rounds*3)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := reopen(t, c)
			for i := range rounds {
				if i == rounds/2 { // a restarted writer: a fresh lease
					h = reopen(t, c)
				}
				var texts []string
				for j := range 1 + i%3 {
					texts = append(texts, fmt.Sprintf("w%d-%d-%d", w, i, j))
				}
				ms, err := h.SendBatch(ToMain, texts)
				if err != nil {
					t.Error(err)
					return
				}
				for _, m := range ms {
					sent <- m
				}
			}
		}()
	}
	stop := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		for {
			select {
			case <-stop:
				return
			default:
				rx.Scan(c)
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-scanned
	rx.Scan(c)
	close(sent)

	if len(problems) != 0 {
		t.Fatalf("%d problems, first: %v", len(problems), problems[0])
	}
	want := map[string]bool{}
	for m := range sent {
		want[m.ID] = true
	}
	if len(delivered) != len(want) {
		t.Fatalf("delivered %d messages, sent %d", len(delivered), len(want))
	}
	for i, m := range delivered {
		if !want[m.ID] {
			t.Fatalf("delivered %s, which was not sent (or twice)", m.ID)
		}
		delete(want, m.ID)
		if i > 0 && m.Sequence <= delivered[i-1].Sequence {
			t.Fatalf("delivery %d has sequence %d after %d", i, m.Sequence, delivered[i-1].Sequence)
		}
	}
	if n := inboxNames(t, c, ToMain); len(n) != 0 {
		t.Fatalf("inbox not empty: %v", n)
	}
}

// TestSequenceCacheNotFooledByInodeReuse: a writer skips re-reading the
// counter when its stat matches the version it read last. Between two of
// its sends other writers may replace the counter more than once; ext4
// hands a new file the lowest free inode number, often the one a replaced
// version (or an acknowledged message) just freed, so inode, size and,
// within one clock tick, times can all match the cached version while its
// value is older, and the writer would reuse numbers from a stale lease.
// The cached version must keep its inode number taken.
func TestSequenceCacheNotFooledByInodeReuse(t *testing.T) {
	c := newTestChannel(t)
	hs := []*Channel{reopen(t, c), reopen(t, c), reopen(t, c)}
	var last int64
	for i := range 30 {
		// Writers 0 and 1 alternate; every third turn writer 2 sends twice.
		w := i % 2
		if i%3 == 2 {
			w = 2
		}
		m, err := hs[w].Send(ToMain, "x")
		if err != nil {
			t.Fatal(err)
		}
		if m.Sequence <= last {
			t.Fatalf("send %d: sequence %d after %d", i, m.Sequence, last)
		}
		last = m.Sequence
		// A receiver frees the inodes of delivered files at once.
		ms, _, err := c.Pending(ToMain)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if err := c.Acknowledge(m); err != nil {
				t.Fatal(err)
			}
		}
		var st unix.Stat_t
		if err := unix.Fstatat(int(c.root.Fd()), sequenceFile(ToMain), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
		now, err := c.Sequence(ToMain)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range hs {
			seen, ok := h.seqSeen[ToMain]
			if ok && seen.dev == int64(st.Dev) && seen.ino == int64(st.Ino) && seen.value != now {
				t.Fatalf("send %d: the counter (%d) has inode %d, the inode of the version writer %d cached (%d): only timestamps tell them apart",
					i, now, st.Ino, j, seen.value)
			}
		}
	}
}

// TestUnlockedWriterOvertakenIsReported: the TypeScript writer takes no
// lock and renames its payload after its counter write. If one of ours
// sends between the two (two writers on one direction, which the protocol
// forbids), ours is published and delivered first, and the TypeScript
// message arrives below a delivered sequence: indistinguishable from a
// replay, so it is refused, but reported and kept on disk, never dropped
// silently.
func TestUnlockedWriterOvertakenIsReported(t *testing.T) {
	c := newTestChannel(t)
	first, err := c.Send(ToMain, "first")
	if err != nil {
		t.Fatal(err)
	}
	// The TypeScript writer: read the counter, write counter+1 (temp and
	// rename, no lock) ...
	prev, err := c.Sequence(ToMain)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest()
	tsWrite := func(name string, v any) {
		t.Helper()
		data, err := encodeJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(c.Dir(), name)
		if err := os.WriteFile(path+".1.000000000000.tmp", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".1.000000000000.tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	tsWrite(sequenceFile(ToMain), sequenceRecord{RunID: m.RunID, Token: m.Token, Sequence: prev + 1})
	// ... one of ours sends meanwhile and is delivered ...
	ours, err := reopen(t, c).Send(ToMain, "ours")
	if err != nil {
		t.Fatal(err)
	}
	if ours.Sequence <= prev+1 {
		t.Fatalf("our sequence %d is not above the TypeScript writer's %d", ours.Sequence, prev+1)
	}
	store := NewMemoryReceipts()
	sess := &session{receipts: store, autoReceipt: true}
	var reports []Problem
	rx := NewReceiver(ToMain, store, sess.submit, func(p Problem) { reports = append(reports, p) })
	if res := rx.Scan(c); res.Acknowledged != 2 {
		t.Fatalf("scan %+v", res)
	}
	// ... then the TypeScript payload lands.
	id := NewID()
	tsWrite(filepath.Join(string(ToMain), id+".json"), wireMessage{Version: 1, ID: id, Sequence: prev + 1,
		RunID: m.RunID, Token: m.Token, CreatedAt: first.CreatedAt, Message: "late"})
	for range 2 {
		rx.Scan(c)
	}
	if len(reports) != 1 || !strings.Contains(reports[0].Error(), id) {
		t.Fatalf("reports %v, want the late message reported once", reports)
	}
	if n := inboxNames(t, c, ToMain); len(n) != 1 || n[0] != id+".json"+AsideSuffix {
		t.Fatalf("inbox %v, want the late message moved aside", n)
	}
}

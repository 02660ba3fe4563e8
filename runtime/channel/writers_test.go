package channel

import (
	"fmt"
	"sync"
	"testing"
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

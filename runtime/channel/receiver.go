package channel

import (
	"fmt"
	"path/filepath"
	"sync"
)

// Delivery is one inbox message handed to the receiving session.
type Delivery struct {
	Channel *Channel
	Message Message
}

// Text is what the receiving Pi must submit as a user message: the delivery
// header followed by the message, so the receipt can be matched later.
func (d Delivery) Text() string { return FormatDelivery(d.Message) }

// Receiver moves messages of one direction from channel inboxes into a
// receiving session. A message is submitted at most once while in flight,
// removed from the inbox only when its receipt is recorded, and retried on a
// later scan if submission fails.
type Receiver struct {
	direction Direction
	receipts  ReceiptStore
	submit    func(Delivery) error
	report    func(Problem)

	mu       sync.Mutex
	inFlight map[Receipt]int64          // submitted, not yet receipted → its sequence
	high     map[seqKey]int64           // delivered high-water marks, when receipts is no SequenceStore
	reported map[string]map[string]bool // channel dir → keys of problems already reported
}

// NewReceiver returns a Receiver for direction d. submit hands a delivery to
// the session (it may record the receipt itself, synchronously or later);
// report is called once per unchanged problem and may be nil.
func NewReceiver(d Direction, receipts ReceiptStore, submit func(Delivery) error, report func(Problem)) *Receiver {
	if report == nil {
		report = func(Problem) {}
	}
	return &Receiver{direction: d, receipts: receipts, submit: submit, report: report,
		inFlight: map[Receipt]int64{}, high: map[seqKey]int64{}, reported: map[string]map[string]bool{}}
}

// ScanResult counts what one Scan did.
type ScanResult struct {
	Submitted    int // handed to submit successfully
	Acknowledged int // removed from the inbox because a receipt exists
	Waiting      int // in flight, waiting for their receipt
	Problems     int // files or steps that failed (reported or not)
}

// Scan reads the inbox of ch once and delivers what is pending in sequence
// order. It never panics on bad files and leaves them on disk; a failing
// submission stops the scan of this channel so later messages do not
// overtake it.
func (r *Receiver) Scan(ch *Channel) (res ScanResult) {
	var problems []Problem
	defer func() {
		res.Problems = len(problems)
		r.reportNew(ch.Dir(), problems)
	}()
	msgs, bad, err := ch.Pending(r.direction)
	if err != nil {
		problems = append(problems, Problem{Path: ch.Dir(), Err: err, key: "list\x00" + err.Error()})
		return res
	}
	problems = append(problems, bad...)
	for _, m := range msgs {
		key := m.Receipt()
		acked, err := r.acknowledgeIfReceipted(ch, m)
		if err != nil {
			problems = append(problems, Problem{Path: ch.Dir(), Err: err, key: "ack\x00" + key.MessageID + "\x00" + err.Error()})
			continue
		}
		if acked {
			res.Acknowledged++
			continue
		}
		if err := r.checkSequence(m); err != nil {
			// Kept on disk for inspection; reported once while it stays.
			problems = append(problems, Problem{Path: filepath.Join(ch.Dir(), string(m.Direction), Safe(m.ID)+".json"),
				Err: err, key: "sequence\x00" + key.MessageID})
			continue
		}
		if !r.claim(key, m.Sequence) {
			res.Waiting++
			continue
		}
		if err := r.submit(Delivery{Channel: ch, Message: m}); err != nil {
			r.Release(key)
			err = fmt.Errorf("submit message %s (sequence %d) from %s: %w", m.ID, m.Sequence, ch.Dir(), err)
			problems = append(problems, Problem{Path: ch.Dir(), Err: err, key: "submit\x00" + key.MessageID + "\x00" + err.Error()})
			return res
		}
		res.Submitted++
		// A session that records the receipt synchronously lets the inbox
		// file go right away instead of on the next wake.
		if acked, err := r.acknowledgeIfReceipted(ch, m); err == nil && acked {
			res.Acknowledged++
		} else {
			res.Waiting++
		}
	}
	return res
}

func (r *Receiver) acknowledgeIfReceipted(ch *Channel, m Message) (bool, error) {
	key := m.Receipt()
	has, err := r.receipts.Has(key)
	if err != nil {
		return false, fmt.Errorf("check receipt %s: %w", key.MessageID, err)
	}
	if !has {
		return false, nil
	}
	if err := r.recordDelivered(m); err != nil {
		return false, err
	}
	if err := ch.Acknowledge(m); err != nil {
		return false, err
	}
	r.Release(key)
	return true, nil
}

// checkSequence refuses a message that is neither receipted nor in flight
// but whose sequence is at or below one already delivered, or one in
// flight, for its run and direction: the sender's counter never goes back,
// so such a file is a replay or a forgery.
func (r *Receiver) checkSequence(m Message) error {
	high, err := r.delivered(m.Direction, m.RunID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.inFlight[m.Receipt()]; ok {
		return nil
	}
	for k, seq := range r.inFlight {
		if k.Direction == m.Direction && k.RunID == m.RunID {
			high = max(high, seq)
		}
	}
	if m.Sequence <= high {
		return fmt.Errorf("rejected message %s: sequence %d is at or below %d, already delivered on %s of run %s; the file is kept for inspection",
			m.ID, m.Sequence, high, m.Direction, m.RunID)
	}
	return nil
}

func (r *Receiver) delivered(d Direction, runID string) (int64, error) {
	if s, ok := r.receipts.(SequenceStore); ok {
		high, err := s.Delivered(d, runID)
		if err != nil {
			return 0, fmt.Errorf("read delivered sequence of %s: %w", runID, err)
		}
		return high, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.high[seqKey{d, runID}], nil
}

// recordDelivered raises the high-water mark to a receipted message's
// sequence before its inbox file goes, so the mark survives a crash.
func (r *Receiver) recordDelivered(m Message) error {
	if s, ok := r.receipts.(SequenceStore); ok {
		return s.RecordDelivered(m.Direction, m.RunID, m.Sequence)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := seqKey{m.Direction, m.RunID}
	r.high[k] = max(r.high[k], m.Sequence)
	return nil
}

func (r *Receiver) claim(key Receipt, seq int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.inFlight[key]; ok {
		return false
	}
	r.inFlight[key] = seq
	return true
}

// Release withdraws an in-flight mark so the next scan submits the message
// again, e.g. after the session dropped its queue without recording it.
func (r *Receiver) Release(key Receipt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.inFlight, key)
}

// InFlight returns the receipts of messages submitted but not yet receipted,
// so a reloaded bridge can carry them over with Restore.
func (r *Receiver) InFlight() []Receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Receipt, 0, len(r.inFlight))
	for k := range r.inFlight {
		out = append(out, k)
	}
	return out
}

// Restore marks keys as in flight, suppressing their resubmission.
func (r *Receiver) Restore(keys []Receipt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if _, ok := r.inFlight[k]; !ok {
			r.inFlight[k] = 0 // sequence unknown: it raises no mark
		}
	}
}

// Forget drops the reported-problem memory of a channel that went away.
func (r *Receiver) Forget(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reported, dir)
}

// reportNew reports problems not reported by the previous scan of the same
// channel; a problem that disappears and comes back is reported again.
func (r *Receiver) reportNew(dir string, problems []Problem) {
	r.mu.Lock()
	prev := r.reported[dir]
	next := make(map[string]bool, len(problems))
	var fresh []Problem
	for _, p := range problems {
		next[p.key] = true
		if !prev[p.key] {
			fresh = append(fresh, p)
		}
	}
	r.reported[dir] = next
	r.mu.Unlock()
	for _, p := range fresh {
		r.report(p)
	}
}

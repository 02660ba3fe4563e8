package channel

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
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
//
// A new message whose sequence is at or below one already delivered (for
// its run and direction) is refused as a replay: every writer publishes in
// sequence order, so a legitimate message is in the inbox before any later
// one is delivered. Messages still waiting in the inbox when a later one is
// delivered (a failed or withdrawn submission) are recorded as waiting and
// stay deliverable.
type Receiver struct {
	direction Direction
	receipts  ReceiptStore
	submit    func(Delivery) error
	report    func(Problem)

	mu       sync.Mutex
	inFlight map[Receipt]int64          // submitted, not yet receipted → its sequence (0: unknown)
	bySeq    map[seqSlot]Receipt        // inFlight by known sequence
	marks    seqMarks                   // delivered marks, when receipts is no SequenceStore
	reported map[string]map[string]bool // channel dir → keys of problems already reported
	next     map[string]cursor          // run id → where ScanMoved may deliver without a listing
}

// cursor is the sequence the next message of a run must carry for
// ScanMoved to deliver it from its file event alone, without listing the
// inbox. It exists only while every message of the run below it that is
// still in the inbox is in flight (claimed, its sequence known): a full
// scan that found exactly that sets it (see resume), each message
// ScanMoved delivers moves it up by one, and anything that could leave a
// message below it undelivered (a scan, a release, a restore, any doubt)
// drops it.
type cursor struct {
	dir  string // the channel's directory, for Forget
	next int64
}

// NewReceiver returns a Receiver for direction d. submit hands a delivery to
// the session (it may record the receipt itself, synchronously or later);
// report is called once per unchanged problem and may be nil.
func NewReceiver(d Direction, receipts ReceiptStore, submit func(Delivery) error, report func(Problem)) *Receiver {
	if report == nil {
		report = func(Problem) {}
	}
	return &Receiver{direction: d, receipts: receipts, submit: submit, report: report,
		inFlight: map[Receipt]int64{}, bySeq: map[seqSlot]Receipt{}, marks: newSeqMarks(), reported: map[string]map[string]bool{},
		next: map[string]cursor{}}
}

// ScanResult counts what one Scan did.
type ScanResult struct {
	Submitted    int // handed to submit successfully
	Acknowledged int // removed from the inbox because a receipt exists
	Waiting      int // in flight, waiting for their receipt
	Problems     int // files or steps that failed (reported or not)
}

// msgState is what one Scan decided about one listed message.
type msgState uint8

const (
	unjudged msgState = iota
	open              // deliverable: submitted, in flight or to be submitted
	refused           // a replayed sequence, kept on disk
	done              // receipted and acknowledged
	unknown           // its receipt or mark could not be read
	skipped           // receipted, left for a later scan
)

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
	run := ch.manifest.RunID
	// Until this scan has seen the inbox, nothing vouches for a cursor.
	r.dropCursor(run)
	// With the delivered mark known, a listing without gaps above it is
	// taken as complete (see pendingAfter); without it, the inbox is
	// listed until a pass finds nothing new.
	after := int64(-1)
	if high, _, err := r.delivered(Receipt{Direction: r.direction, RunID: run}); err == nil {
		after = high
	}
	msgs, bad, complete, err := ch.pendingAfter(r.direction, after)
	if err != nil {
		problems = append(problems, Problem{Path: ch.Dir(), Err: err, key: "list\x00" + err.Error()})
		return res
	}
	problems = append(problems, bad...)
	state := make([]msgState, len(msgs))
	// Receipted messages are acknowledged first, so the delivered mark is
	// up to date before any new file is judged against it.
	for i, m := range msgs {
		acked, err := r.acknowledgeIfReceipted(ch, msgs, state, i)
		if err != nil {
			problems = append(problems, Problem{Path: ch.Dir(), Err: err, key: "ack\x00" + m.ID + "\x00" + err.Error()})
			continue
		}
		if acked {
			state[i] = done
			res.Acknowledged++
			continue
		}
		if state[i] == skipped { // receipted, acknowledged on a later scan
			res.Waiting++
			continue
		}
		r.learn(m.Receipt(), m.Sequence)
	}
	for i, m := range msgs {
		if state[i] == unjudged {
			if err := r.judge(msgs, state, i); err != nil {
				problems = append(problems, Problem{Path: ch.Dir(), Err: err, key: "mark\x00" + m.ID + "\x00" + err.Error()})
			}
		}
		switch state[i] {
		case refused:
			// Moved aside, kept for inspection: left in the inbox it would
			// keep the channel retained for ever.
			path := filepath.Join(ch.Dir(), string(m.Direction), Safe(m.ID)+".json")
			aside, err := ch.SetAside(m)
			if err != nil {
				problems = append(problems, Problem{Path: path, Err: err, key: "aside\x00" + m.ID + "\x00" + err.Error()})
				continue
			}
			problems = append(problems, Problem{Path: aside, Err: r.regression(m, aside), key: "sequence\x00" + m.ID})
			continue
		case open:
		default:
			continue
		}
		key := m.Receipt()
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
		if acked, err := r.acknowledgeIfReceipted(ch, msgs, state, i); err == nil && acked {
			state[i] = done
			res.Acknowledged++
		} else {
			res.Waiting++
		}
	}
	// Rejected files are skipped by both paths alike (a new one is read,
	// and reported, by a full scan, as ScanMoved falls back on it); any
	// other problem leaves the next wake to a full scan.
	if complete && len(problems) == len(bad) {
		r.resume(ch, msgs, state)
	}
	return res
}

// resume sets the cursor of ch's run after a full scan that listed the
// whole inbox (msgs, judged as state) without a problem, if every message
// it listed is acknowledged or in flight: then no message below the
// highest sequence seen or delivered waits for a delivery, and the next
// one is the first that can.
func (r *Receiver) resume(ch *Channel, msgs []Message, state []msgState) {
	run := ch.manifest.RunID
	high, _, err := r.delivered(Receipt{Direction: r.direction, RunID: run})
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, m := range msgs {
		switch state[i] {
		case done:
		case open:
			// Waiting behind another file of its sequence, or not
			// submitted at all, it is not in flight under its own key.
			if seq, ok := r.inFlight[m.Receipt()]; !ok || seq != m.Sequence {
				return
			}
		default:
			return
		}
		high = max(high, m.Sequence)
	}
	r.next[run] = cursor{dir: ch.Dir(), next: high + 1}
}

// dropCursor forgets the cursor of run, so its next wake lists the inbox.
func (r *Receiver) dropCursor(run string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.next, run)
}

// ScanMoved is Scan for a wake whose only cause is the message files
// names, moved into the inbox of ch (their file events, in the order they
// came; the Watcher calls it through WatchOptions.ScanMoved). While
// the run's cursor stands, a named file that is valid and carries exactly
// the cursor's sequence is delivered without listing the inbox: a listing
// would find nothing it may not overtake, since every message below the
// cursor still in the inbox is in flight, and writers publish in sequence
// order. Anything else, a gap or an older sequence, a file that is gone,
// rejected or already receipted, or no cursor (the first scan, after a
// release, a problem, a replay), falls back to Scan, which lists the inbox
// and judges every file as before; so do the names after it.
func (r *Receiver) ScanMoved(ch *Channel, names []string) ScanResult {
	res, handled := r.scanMoved(ch, names)
	if handled {
		return res
	}
	full := r.Scan(ch)
	res.Submitted += full.Submitted
	res.Acknowledged += full.Acknowledged
	res.Waiting = full.Waiting // the full scan saw every message ScanMoved left waiting
	res.Problems += full.Problems
	return res
}

// scanMoved delivers names by their events alone as ScanMoved describes;
// handled is false when the rest must be left to a full scan.
func (r *Receiver) scanMoved(ch *Channel, names []string) (res ScanResult, handled bool) {
	inbox, ok := ch.inbox[r.direction]
	if !ok || len(names) == 0 {
		return res, false
	}
	for _, name := range names {
		if !r.moveOne(ch, inbox, name, &res) {
			return res, false
		}
		if res.Problems > 0 {
			return res, true // a failed submission: the rest waits for the next wake
		}
	}
	return res, true
}

// moveOne is scanMoved's step for one name, adding what it did to res; it
// reports false when the name is for a full scan.
func (r *Receiver) moveOne(ch *Channel, inbox *os.File, name string, res *ScanResult) bool {
	r.mu.Lock()
	cur, ok := r.next[ch.manifest.RunID]
	r.mu.Unlock()
	if !ok || !strings.HasSuffix(name, ".json") {
		return false
	}
	m, fd, perr := ch.readMessageOpen(inbox, r.direction, name)
	if perr != nil {
		return false
	}
	// Closed once the message is handed on: the close is a system call
	// the delivery need not wait for.
	defer unix.Close(fd)
	if m.Sequence != cur.next {
		return false
	}
	key := m.Receipt()
	if has, err := r.receipts.Has(key); err != nil || has {
		return false // acknowledging it is the full scan's work
	}
	if high, _, err := r.delivered(key); err != nil || m.Sequence <= high {
		return false // the mark moved meanwhile: judged there
	}
	if !r.claimNext(key, m.Sequence) {
		return false
	}
	if err := r.submit(Delivery{Channel: ch, Message: m}); err != nil {
		r.Release(key) // drops the cursor too: the next wake lists
		err = fmt.Errorf("submit message %s (sequence %d) from %s: %w", m.ID, m.Sequence, ch.Dir(), err)
		res.Problems++
		r.reportMore(ch.Dir(), []Problem{{Path: ch.Dir(), Err: err, key: "submit\x00" + key.MessageID + "\x00" + err.Error()}})
		return true
	}
	res.Submitted++
	if has, err := r.receipts.Has(key); err != nil || !has {
		res.Waiting++
		return true
	}
	// A session that records the receipt synchronously lets the file go
	// at once. With another message of the run in flight below it, the
	// delivered mark must name that one as waiting: the full scan knows
	// which are still in the inbox.
	if r.othersInFlight(key) {
		return false
	}
	acked, err := r.acknowledgeIfReceipted(ch, []Message{m}, []msgState{open}, 0)
	if err != nil || !acked {
		return false
	}
	res.Acknowledged++
	return true
}

// claimNext claims key like claim, if seq is still its run's cursor, and
// moves the cursor past it in the same step, so a concurrent scan that
// dropped or moved the cursor makes ScanMoved fall back instead.
func (r *Receiver) claimNext(key Receipt, seq int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, ok := r.next[key.RunID]
	if !ok || cur.next != seq || !r.claimLocked(key, seq) {
		return false
	}
	cur.next++
	r.next[key.RunID] = cur
	return true
}

// othersInFlight reports whether a message of key's run and direction
// other than key is in flight.
func (r *Receiver) othersInFlight(key Receipt) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.inFlight {
		if k != key && k.RunID == key.RunID && k.Direction == key.Direction {
			return true
		}
	}
	return false
}

// acknowledgeIfReceipted removes msgs[i] from the inbox if its receipt
// exists, after raising the delivered mark to its sequence and recording
// the deliverable messages below it as waiting. While a message below it
// could not be judged, the mark is not raised: msgs[i] is marked skipped
// and stays for a later scan.
func (r *Receiver) acknowledgeIfReceipted(ch *Channel, msgs []Message, state []msgState, i int) (bool, error) {
	m := msgs[i]
	key := m.Receipt()
	has, err := r.receipts.Has(key)
	if err != nil {
		state[i] = unknown
		return false, fmt.Errorf("check receipt %s: %w", key.MessageID, err)
	}
	if !has {
		return false, nil
	}
	state[i] = skipped // until acknowledged below
	var waiting []string
	for j := range i {
		if msgs[j].Sequence >= m.Sequence {
			continue
		}
		if state[j] == unjudged {
			if err := r.judge(msgs, state, j); err != nil {
				return false, err
			}
		}
		switch state[j] {
		case open:
			waiting = append(waiting, msgs[j].ID)
		case unknown:
			return false, nil
		}
	}
	if err := r.recordDelivered(m, waiting); err != nil {
		return false, err
	}
	if err := ch.Acknowledge(m); err != nil {
		return false, err
	}
	r.release(key)
	return true, nil
}

// judge decides whether the unreceipted msgs[i] is deliverable or a
// replay: a new id at or below the delivered mark that was not waiting when
// the mark passed it. A judged message keeps its state for the scan, as a
// mark raised later in the scan records every open message below it.
func (r *Receiver) judge(msgs []Message, state []msgState, i int) error {
	m := msgs[i]
	high, waiting, err := r.delivered(m.Receipt())
	if err != nil {
		state[i] = unknown
		return err
	}
	if m.Sequence <= high && !waiting {
		state[i] = refused
	} else {
		state[i] = open
	}
	return nil
}

// regression is the refusal of a replayed message, moved aside to aside.
// Besides a replay, the one way a legitimate writer produces it is a lost
// counter: the TypeScript writer does not fsync its sequence file, so
// after a power loss it can reuse numbers; the message says so.
func (r *Receiver) regression(m Message, aside string) error {
	high, _, _ := r.delivered(m.Receipt())
	return fmt.Errorf("rejected message %s: sequence %d is at or below %d, already delivered on %s of run %s: a replay, or a writer "+
		"that lost its counter (the TypeScript writer does not fsync it, so a power loss can make it reuse numbers) or that "+
		"wrote beside another writer of the direction; moved aside to %s for inspection",
		m.ID, m.Sequence, high, m.Direction, m.RunID, aside)
}

func (r *Receiver) delivered(key Receipt) (int64, bool, error) {
	if s, ok := r.receipts.(SequenceStore); ok {
		high, waiting, err := s.Delivered(key)
		if err != nil {
			return 0, false, fmt.Errorf("read delivered sequence of %s: %w", key.RunID, err)
		}
		return high, waiting, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	high, waiting := r.marks.delivered(key)
	return high, waiting, nil
}

// recordDelivered raises the mark to a receipted message's sequence before
// its inbox file goes, so the mark survives a crash.
func (r *Receiver) recordDelivered(m Message, waiting []string) error {
	if s, ok := r.receipts.(SequenceStore); ok {
		return s.RecordDelivered(m.Direction, m.RunID, m.Sequence, waiting)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.marks.raise(m.Direction, m.RunID, m.Sequence, waiting)
	r.marks.receipted(m.Receipt())
	return nil
}

// claim marks key in flight unless it already is, or another message of
// its run and direction with the same sequence is: a sequence is delivered
// once, so a second file with it waits until the first is receipted (then
// it is refused) or withdrawn.
func (r *Receiver) claim(key Receipt, seq int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.claimLocked(key, seq)
}

// claimLocked is claim with r.mu held.
func (r *Receiver) claimLocked(key Receipt, seq int64) bool {
	slot := seqSlot{seqKey{key.Direction, key.RunID}, seq}
	if _, ok := r.inFlight[key]; ok {
		return false
	}
	if _, taken := r.bySeq[slot]; taken {
		return false
	}
	r.inFlight[key] = seq
	r.bySeq[slot] = key
	return true
}

// learn records the sequence of a message restored as in flight, so a
// second file with that sequence waits like one behind any in-flight message.
func (r *Receiver) learn(key Receipt, seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.inFlight[key]; ok && cur == 0 {
		r.inFlight[key] = seq
		slot := seqSlot{seqKey{key.Direction, key.RunID}, seq}
		if _, taken := r.bySeq[slot]; !taken {
			r.bySeq[slot] = key
		}
	}
}

// seqSlot is one sequence of one run and direction.
type seqSlot struct {
	seqKey
	seq int64
}

// Release withdraws an in-flight mark so the next scan submits the message
// again, e.g. after the session dropped its queue without recording it.
// That scan lists the inbox: the message is below its run's cursor and no
// longer in flight, so the cursor goes.
func (r *Receiver) Release(key Receipt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.next, key.RunID)
	r.releaseLocked(key)
}

// release drops the in-flight mark of an acknowledged message.
func (r *Receiver) release(key Receipt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releaseLocked(key)
}

func (r *Receiver) releaseLocked(key Receipt) {
	if seq, ok := r.inFlight[key]; ok {
		slot := seqSlot{seqKey{key.Direction, key.RunID}, seq}
		if r.bySeq[slot] == key {
			delete(r.bySeq, slot)
		}
		delete(r.inFlight, key)
	}
}

// InFlight returns the receipts of messages submitted but not yet receipted,
// so a reloaded bridge can carry them over with Restore.
func (r *Receiver) InFlight() []Receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Keys(r.inFlight))
}

// Restore marks keys as in flight, suppressing their resubmission. Their
// sequences are unknown until a scan lists them, so their runs' cursors go.
func (r *Receiver) Restore(keys []Receipt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		delete(r.next, k.RunID)
		if _, ok := r.inFlight[k]; !ok {
			r.inFlight[k] = 0 // sequence unknown: it raises no mark
		}
	}
}

// Forget drops the reported-problem memory and the cursor of a channel
// that went away.
func (r *Receiver) Forget(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reported, dir)
	for run, cur := range r.next {
		if cur.dir == dir {
			delete(r.next, run)
		}
	}
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

// reportMore reports the problems of a scan that saw only part of the
// channel (ScanMoved) and were not reported yet, adding them to what was:
// the problems of the last full scan stay reported, and that scan's
// successor decides what is still there.
func (r *Receiver) reportMore(dir string, problems []Problem) {
	r.mu.Lock()
	prev := r.reported[dir]
	if prev == nil {
		prev = map[string]bool{}
		r.reported[dir] = prev
	}
	var fresh []Problem
	for _, p := range problems {
		if !prev[p.key] {
			prev[p.key] = true
			fresh = append(fresh, p)
		}
	}
	r.mu.Unlock()
	for _, p := range fresh {
		r.report(p)
	}
}

// Follow delivers the messages of c to rx until ctx ends: a scan at once,
// then one per file event and rescan (a Watcher of rx's direction, with
// rx.ScanMoved for moved-in files). Watch failures go to report.
func Follow(ctx context.Context, c *Channel, rx *Receiver, report func(error)) error {
	w, err := NewWatcher(rx.direction, func(ch *Channel) { rx.Scan(ch) }, WatchOptions{
		Report:    report,
		ScanMoved: func(ch *Channel, names []string) { rx.ScanMoved(ch, names) },
	})
	if err != nil {
		return err
	}
	w.Add(c)
	<-ctx.Done()
	return w.Close()
}

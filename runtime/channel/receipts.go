package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/facets-dev/facets/internal/safefile"
)

// ReceiptStore records which messages a receiving session has accepted. A
// message stays in its inbox until the store has its receipt.
type ReceiptStore interface {
	Has(r Receipt) (bool, error)
	Record(r Receipt) error
}

// SequenceStore is implemented by receipt stores that also keep, per run
// and direction, the highest sequence delivered, so a new message that
// reuses an old sequence is refused even after a restart. The Receiver
// keeps the mark in memory for stores without it.
//
// A mark can pass a message that is still waiting (its submission failed or
// was withdrawn while a later one was delivered); such messages are named
// when the mark is raised and stay deliverable.
type SequenceStore interface {
	// Delivered returns the mark of r's direction and run, and whether r
	// was still waiting below it when it was raised.
	Delivered(r Receipt) (high int64, waiting bool, err error)
	// RecordDelivered raises the mark of d of runID to seq; waiting names
	// the messages below seq still in the inbox, undelivered.
	RecordDelivered(d Direction, runID string, seq int64, waiting []string) error
}

// seqKey names one direction of one run in a SequenceStore.
type seqKey struct {
	Direction Direction
	RunID     string
}

// seqMarks is the memory of a SequenceStore; its user serializes access.
type seqMarks struct {
	high    map[seqKey]int64
	waiting map[Receipt]bool // passed by a mark, not yet receipted
}

func newSeqMarks() seqMarks {
	return seqMarks{high: map[seqKey]int64{}, waiting: map[Receipt]bool{}}
}

func (m *seqMarks) delivered(r Receipt) (int64, bool) {
	return m.high[seqKey{r.Direction, r.RunID}], m.waiting[r]
}

// fresh reports whether raising the mark of d of runID to seq with waiting
// changes anything.
func (m *seqMarks) fresh(d Direction, runID string, seq int64, waiting []string) bool {
	if seq > m.high[seqKey{d, runID}] {
		return true
	}
	for _, id := range waiting {
		if !m.waiting[Receipt{Direction: d, RunID: runID, MessageID: id}] {
			return true
		}
	}
	return false
}

func (m *seqMarks) raise(d Direction, runID string, seq int64, waiting []string) {
	k := seqKey{d, runID}
	m.high[k] = max(m.high[k], seq)
	for _, id := range waiting {
		m.waiting[Receipt{Direction: d, RunID: runID, MessageID: id}] = true
	}
}

// receipted forgets r as waiting: its receipt now speaks for it.
func (m *seqMarks) receipted(r Receipt) { delete(m.waiting, r) }

// receiptMemory is what both stores keep in memory: the receipts seen and
// the delivered marks, behind one lock. Its users write through it after
// persisting, if they persist at all.
type receiptMemory struct {
	mu    sync.Mutex
	seen  map[Receipt]bool
	marks seqMarks
}

func newReceiptMemory() receiptMemory {
	return receiptMemory{seen: map[Receipt]bool{}, marks: newSeqMarks()}
}

// Has reports whether r was recorded.
func (s *receiptMemory) Has(r Receipt) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[r], nil
}

// Delivered returns the mark of r's direction and run and whether r was
// waiting below it.
func (s *receiptMemory) Delivered(r Receipt) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	high, waiting := s.marks.delivered(r)
	return high, waiting, nil
}

// remember stores r as seen; s.mu must be held.
func (s *receiptMemory) remember(r Receipt) {
	s.seen[r] = true
	s.marks.receipted(r)
}

// MemoryReceipts keeps receipts only for the life of the process, like an
// ephemeral Pi session.
type MemoryReceipts struct {
	receiptMemory
}

// NewMemoryReceipts returns an empty in-memory store.
func NewMemoryReceipts() *MemoryReceipts {
	return &MemoryReceipts{receiptMemory: newReceiptMemory()}
}

// RecordDelivered raises the mark of d of runID to seq and keeps the
// waiting messages below it deliverable.
func (s *MemoryReceipts) RecordDelivered(d Direction, runID string, seq int64, waiting []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks.raise(d, runID, seq, waiting)
	return nil
}

// Record stores r.
func (s *MemoryReceipts) Record(r Receipt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remember(r)
	return nil
}

// FileReceipts is an append-only JSON-lines receipt log, fsynced per record,
// standing in for a persisted Pi session. A line torn by a crash is dropped
// when the log is reopened, so its message is delivered again, never twice.
// Lines with a "sequence" and no "messageId" hold the delivered
// high-water marks of SequenceStore, with the ids of the messages still
// waiting below them in "waiting".
//
// The log's first line names its format, {"receiptLog":2}; a log without
// one is read as format 2 too (format 1, receipts only, is a subset). A
// facets that meets a higher format refuses the log as written by a newer
// facets instead of calling it corrupt, so a format change never passes
// for damage.
type FileReceipts struct {
	receiptMemory
	f    *os.File
	size int64 // length of the log up to its last complete line
}

// logLine is one line of the receipt log: a receipt, or a high-water mark.
type logLine struct {
	Direction Direction `json:"direction"`
	RunID     string    `json:"runId"`
	MessageID string    `json:"messageId,omitempty"`
	Sequence  int64     `json:"sequence,omitempty"`
	Waiting   []string  `json:"waiting,omitempty"`
}

// ReceiptLogFormat is the receipt log format this facets writes and the
// highest it reads: 1 held receipts only, 2 added the high-water lines.
const ReceiptLogFormat = 2

// logHeader is the first line of a receipt log.
type logHeader struct {
	ReceiptLog int `json:"receiptLog"`
}

// ErrNewerReceiptLog is wrapped by OpenFileReceipts' error for a log in a
// format newer than ReceiptLogFormat.
var ErrNewerReceiptLog = errors.New("written by a newer facets")

// MaxReceiptLogBytes caps a receipt log read by OpenFileReceipts, about
// half a million receipts.
const MaxReceiptLogBytes = 64 << 20

// OpenFileReceipts opens or creates the receipt log at path (mode 0600).
// Like every file facets reads, it must be a regular file (a FIFO is
// refused, not waited on) within MaxReceiptLogBytes.
func OpenFileReceipts(path string) (*FileReceipts, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open receipts: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > MaxReceiptLogBytes {
		f.Close()
		switch {
		case err != nil:
			return nil, fmt.Errorf("open receipts: %w", err)
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("open receipts %s: %w (%s)", path, safefile.ErrNotRegular, safefile.Kind(fi.Mode()))
		}
		return nil, fmt.Errorf("open receipts %s: %w", path, &safefile.TooLargeError{Size: fi.Size(), Limit: MaxReceiptLogBytes})
	}
	s := &FileReceipts{receiptMemory: newReceiptMemory(), f: f}
	if err := s.load(); err != nil {
		f.Close()
		return nil, fmt.Errorf("open receipts %s: %w", path, err)
	}
	return s, nil
}

func (s *FileReceipts) load() error {
	data, err := io.ReadAll(s.f)
	if err != nil {
		return err
	}
	good := 0
	if end := bytes.IndexByte(data, '\n'); end >= 0 && bytes.Contains(data[:end], []byte(`"receiptLog"`)) {
		var h logHeader
		if err := json.Unmarshal(data[:end], &h); err != nil || h.ReceiptLog < 1 {
			return fmt.Errorf("corrupt receipt log header at byte 0")
		}
		if h.ReceiptLog > ReceiptLogFormat {
			return fmt.Errorf("receipt log format %d is %w (this facets reads formats up to %d); upgrade facets to resume this session",
				h.ReceiptLog, ErrNewerReceiptLog, ReceiptLogFormat)
		}
		good = end + 1
	}
	for good < len(data) {
		end := bytes.IndexByte(data[good:], '\n')
		if end < 0 {
			break // torn final line
		}
		line := data[good : good+end]
		var l logLine
		if err := json.Unmarshal(line, &l); err != nil || !l.Direction.Valid() || l.RunID == "" || (l.MessageID == "") == (l.Sequence <= 0) ||
			(l.MessageID != "" && l.Waiting != nil) || slices.Contains(l.Waiting, "") {
			return fmt.Errorf("corrupt receipt at byte %d", good)
		}
		if l.MessageID != "" {
			s.remember(Receipt{Direction: l.Direction, RunID: l.RunID, MessageID: l.MessageID})
		} else {
			s.marks.raise(l.Direction, l.RunID, l.Sequence, l.Waiting)
		}
		good += end + 1
	}
	if good < len(data) {
		if err := s.f.Truncate(int64(good)); err != nil {
			return fmt.Errorf("drop torn receipt: %w", err)
		}
	}
	s.size = int64(good)
	if _, err := s.f.Seek(s.size, io.SeekStart); err != nil {
		return err
	}
	if s.size == 0 {
		// A new log (or one whose only line was torn) starts with its format.
		h, _ := json.Marshal(logHeader{ReceiptLog: ReceiptLogFormat})
		if err := s.writeLine(h); err != nil {
			return fmt.Errorf("write receipt log header: %w", err)
		}
	}
	return nil
}

// Record appends r and fsyncs the log before returning.
func (s *FileReceipts) Record(r Receipt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[r] {
		return nil
	}
	if err := s.append(logLine{Direction: r.Direction, RunID: r.RunID, MessageID: r.MessageID}); err != nil {
		return fmt.Errorf("record receipt %s: %w", r.MessageID, err)
	}
	s.remember(r)
	return nil
}

// RecordDelivered raises the mark of d of runID to seq, keeping the
// waiting messages below it deliverable, in one line fsynced like a
// receipt; a call that changes nothing writes nothing.
func (s *FileReceipts) RecordDelivered(d Direction, runID string, seq int64, waiting []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.marks.fresh(d, runID, seq, waiting) {
		return nil
	}
	if err := s.append(logLine{Direction: d, RunID: runID, Sequence: seq, Waiting: waiting}); err != nil {
		return fmt.Errorf("record delivered sequence %d: %w", seq, err)
	}
	s.marks.raise(d, runID, seq, waiting)
	return nil
}

// append writes one fsynced line; s.mu must be held.
func (s *FileReceipts) append(l logLine) error {
	line, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return s.writeLine(line)
}

// writeLine appends line and a newline, fsynced; s.mu must be held (or s
// not yet shared).
func (s *FileReceipts) writeLine(line []byte) error {
	line = append(line, '\n')
	_, err := s.f.Write(line)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// Cut a partial line so the next record starts on a clean line.
		_ = s.f.Truncate(s.size)
		_, _ = s.f.Seek(s.size, io.SeekStart)
		return err
	}
	s.size += int64(len(line))
	return nil
}

// Close closes the log file.
func (s *FileReceipts) Close() error {
	if err := s.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("close receipts: %w", err)
	}
	return nil
}

// OpenReceipts opens the receipt log at path (OpenFileReceipts), or an
// in-memory store when path is empty; closeStore releases it.
func OpenReceipts(path string) (store ReceiptStore, closeStore func() error, err error) {
	if path == "" {
		return NewMemoryReceipts(), func() error { return nil }, nil
	}
	s, err := OpenFileReceipts(path)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
type SequenceStore interface {
	Delivered(d Direction, runID string) (int64, error)
	RecordDelivered(d Direction, runID string, seq int64) error
}

// seqKey names one direction of one run in a SequenceStore.
type seqKey struct {
	Direction Direction
	RunID     string
}

// MemoryReceipts keeps receipts only for the life of the process, like an
// ephemeral Pi session.
type MemoryReceipts struct {
	mu   sync.Mutex
	seen map[Receipt]bool
	high map[seqKey]int64
}

// NewMemoryReceipts returns an empty in-memory store.
func NewMemoryReceipts() *MemoryReceipts {
	return &MemoryReceipts{seen: map[Receipt]bool{}, high: map[seqKey]int64{}}
}

// Delivered returns the highest sequence recorded for d of runID.
func (s *MemoryReceipts) Delivered(d Direction, runID string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.high[seqKey{d, runID}], nil
}

// RecordDelivered raises the mark of d of runID to seq.
func (s *MemoryReceipts) RecordDelivered(d Direction, runID string, seq int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := seqKey{d, runID}
	s.high[k] = max(s.high[k], seq)
	return nil
}

// Has reports whether r was recorded.
func (s *MemoryReceipts) Has(r Receipt) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[r], nil
}

// Record stores r.
func (s *MemoryReceipts) Record(r Receipt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[r] = true
	return nil
}

// FileReceipts is an append-only JSON-lines receipt log, fsynced per record,
// standing in for a persisted Pi session. A line torn by a crash is dropped
// when the log is reopened, so its message is delivered again, never twice.
// Lines with a "sequence" and no "messageId" hold the delivered
// high-water marks of SequenceStore.
type FileReceipts struct {
	mu   sync.Mutex
	f    *os.File
	seen map[Receipt]bool
	high map[seqKey]int64
	size int64 // length of the log up to its last complete line
}

// logLine is one line of the receipt log: a receipt, or a high-water mark.
type logLine struct {
	Direction Direction `json:"direction"`
	RunID     string    `json:"runId"`
	MessageID string    `json:"messageId,omitempty"`
	Sequence  int64     `json:"sequence,omitempty"`
}

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
	s := &FileReceipts{f: f, seen: map[Receipt]bool{}, high: map[seqKey]int64{}}
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
	for good < len(data) {
		end := bytes.IndexByte(data[good:], '\n')
		if end < 0 {
			break // torn final line
		}
		line := data[good : good+end]
		var l logLine
		if err := json.Unmarshal(line, &l); err != nil || !l.Direction.Valid() || l.RunID == "" || (l.MessageID == "") == (l.Sequence <= 0) {
			return fmt.Errorf("corrupt receipt at byte %d", good)
		}
		if l.MessageID != "" {
			s.seen[Receipt{Direction: l.Direction, RunID: l.RunID, MessageID: l.MessageID}] = true
		} else {
			k := seqKey{l.Direction, l.RunID}
			s.high[k] = max(s.high[k], l.Sequence)
		}
		good += end + 1
	}
	if good < len(data) {
		if err := s.f.Truncate(int64(good)); err != nil {
			return fmt.Errorf("drop torn receipt: %w", err)
		}
	}
	s.size = int64(good)
	_, err = s.f.Seek(s.size, io.SeekStart)
	return err
}

// Has reports whether r was recorded.
func (s *FileReceipts) Has(r Receipt) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[r], nil
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
	s.seen[r] = true
	return nil
}

// Delivered returns the highest sequence recorded for d of runID.
func (s *FileReceipts) Delivered(d Direction, runID string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.high[seqKey{d, runID}], nil
}

// RecordDelivered raises the mark of d of runID to seq, fsynced like a
// receipt; a mark that is not higher writes nothing.
func (s *FileReceipts) RecordDelivered(d Direction, runID string, seq int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := seqKey{d, runID}
	if seq <= s.high[k] {
		return nil
	}
	if err := s.append(logLine{Direction: d, RunID: runID, Sequence: seq}); err != nil {
		return fmt.Errorf("record delivered sequence %d: %w", seq, err)
	}
	s.high[k] = seq
	return nil
}

// append writes one fsynced line; s.mu must be held.
func (s *FileReceipts) append(l logLine) error {
	line, err := json.Marshal(l)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	_, err = s.f.Write(line)
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

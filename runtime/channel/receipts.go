package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ReceiptStore records which messages a receiving session has accepted. A
// message stays in its inbox until the store has its receipt.
type ReceiptStore interface {
	Has(r Receipt) (bool, error)
	Record(r Receipt) error
}

// MemoryReceipts keeps receipts only for the life of the process, like an
// ephemeral Pi session.
type MemoryReceipts struct {
	mu   sync.Mutex
	seen map[Receipt]bool
}

// NewMemoryReceipts returns an empty in-memory store.
func NewMemoryReceipts() *MemoryReceipts { return &MemoryReceipts{seen: map[Receipt]bool{}} }

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
type FileReceipts struct {
	mu   sync.Mutex
	f    *os.File
	seen map[Receipt]bool
	size int64 // length of the log up to its last complete line
}

// OpenFileReceipts opens or creates the receipt log at path (mode 0600).
func OpenFileReceipts(path string) (*FileReceipts, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open receipts: %w", err)
	}
	s := &FileReceipts{f: f, seen: map[Receipt]bool{}}
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
		var r Receipt
		if err := json.Unmarshal(line, &r); err != nil || !r.Direction.Valid() || r.RunID == "" || r.MessageID == "" {
			return fmt.Errorf("corrupt receipt at byte %d", good)
		}
		s.seen[r] = true
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
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("record receipt: %w", err)
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
		return fmt.Errorf("record receipt %s: %w", r.MessageID, err)
	}
	s.size += int64(len(line))
	s.seen[r] = true
	return nil
}

// Close closes the log file.
func (s *FileReceipts) Close() error {
	if err := s.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("close receipts: %w", err)
	}
	return nil
}

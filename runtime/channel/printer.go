package channel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/facets-dev/facets/internal/termesc"
)

// DeliveryLine is one JSON line of facets channel recv and watch output.
type DeliveryLine struct {
	Direction Direction `json:"direction"`
	RunID     string    `json:"runId"`
	MessageID string    `json:"messageId"`
	Sequence  int64     `json:"sequence"`
	CreatedAt int64     `json:"createdAt"`
	Message   string    `json:"message"`
	Text      string    `json:"text"` // header + message, as a Pi session must record it
}

// Printer is a Receiver's submit and report for a reader outside Pi: it
// writes each delivery as one JSON line and records its receipt after the
// line is written, so a message leaves the inbox only once printed (at
// least once, never lost). With a limit it takes no more than that many
// deliveries (the rest stay queued) and calls done at the last.
type Printer struct {
	mu       sync.Mutex
	out      *json.Encoder
	errw     io.Writer
	receipts ReceiptStore
	count    int
	problems int
	limit    int
	done     func()
}

// NewPrinter prints to out, reports problems on errw and records receipts
// in receipts; limit 0 means no limit, done may be nil.
func NewPrinter(out, errw io.Writer, receipts ReceiptStore, limit int, done func()) *Printer {
	return &Printer{out: json.NewEncoder(out), errw: errw, receipts: receipts, limit: limit, done: done}
}

// Submit prints d and records its receipt (a Receiver's submit).
func (p *Printer) Submit(d Delivery) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limit > 0 && p.count >= p.limit {
		return errDeliveryLimit
	}
	m := d.Message
	if err := p.out.Encode(DeliveryLine{m.Direction, m.RunID, m.ID, m.Sequence, m.CreatedAt, m.Text, d.Text()}); err != nil {
		return err
	}
	if err := p.receipts.Record(m.Receipt()); err != nil {
		return err
	}
	p.count++
	if p.limit > 0 && p.count >= p.limit && p.done != nil {
		p.done()
	}
	return nil
}

// errDeliveryLimit holds back messages beyond the limit; they stay queued.
var errDeliveryLimit = errors.New("delivery limit reached")

// Report prints one channel problem (a Receiver's report); what the limit
// held back is no problem.
func (p *Printer) Report(pr Problem) {
	if errors.Is(pr.Err, errDeliveryLimit) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems++
	fmt.Fprintf(p.errw, "facets: channel problem: %s\n", termesc.Escape(pr.Err.Error()))
}

// Problems is how many problems Report printed.
func (p *Printer) Problems() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.problems
}

package channel

import (
	"fmt"
	"strings"
)

// Report is the state of one channel as seen by its owner, for
// `facets channel inspect`; it never includes the capability token.
type Report struct {
	Dir           string                 `json:"dir"`
	RunID         string                 `json:"runId"`
	MainSessionID string                 `json:"mainSessionId"`
	Title         string                 `json:"title"`
	CreatedAt     int64                  `json:"createdAt"`
	Sequences     map[Direction]int64    `json:"sequences"` // persisted counters (reservations)
	Pending       map[Direction][]Queued `json:"pending"`
	Controls      []string               `json:"controls"`  // control files present and valid
	TempFiles     []string               `json:"tempFiles"` // leftovers of interrupted writes
	Problems      []string               `json:"problems"`  // corrupt or foreign files, bad counters
}

// Queued summarizes one pending message.
type Queued struct {
	ID        string `json:"id"`
	Sequence  int64  `json:"sequence"`
	CreatedAt int64  `json:"createdAt"`
	Bytes     int    `json:"bytes"`
}

// Inspect reads a channel without its token (the caller owns the directory)
// and reports its state, including every file it would refuse to deliver.
func Inspect(dir string) (Report, error) {
	c, err := openUnchecked(dir)
	if err != nil {
		return Report{}, fmt.Errorf("inspect: %w", err)
	}
	defer c.Close()
	m := c.Manifest()
	r := Report{Dir: dir, RunID: m.RunID, MainSessionID: m.MainSessionID, Title: m.Title, CreatedAt: m.CreatedAt,
		Sequences: map[Direction]int64{}, Pending: map[Direction][]Queued{}, Controls: []string{}, TempFiles: []string{}, Problems: []string{}}
	for _, d := range []Direction{ToMain, ToSub} {
		seq, err := c.Sequence(d)
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		r.Sequences[d] = seq
		msgs, problems, err := c.Pending(d)
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		r.Pending[d] = []Queued{}
		for _, msg := range msgs {
			r.Pending[d] = append(r.Pending[d], Queued{ID: msg.ID, Sequence: msg.Sequence, CreatedAt: msg.CreatedAt, Bytes: len(msg.Text)})
		}
		for _, p := range problems {
			r.Problems = append(r.Problems, p.Error())
		}
		names, _ := listNames(c.inbox[d])
		for _, n := range names {
			if strings.HasSuffix(n, ".tmp") {
				r.TempFiles = append(r.TempFiles, string(d)+"/"+n)
			}
			if strings.HasSuffix(n, AsideSuffix) {
				r.Problems = append(r.Problems, fmt.Sprintf("%s/%s: refused as a replayed sequence, kept for inspection", d, n))
			}
		}
	}
	checks := []struct {
		name string
		read func() (bool, error)
	}{
		{sessionName, func() (bool, error) { _, ok, err := c.Session(); return ok, err }},
		{activeTurnFile, func() (bool, error) { _, ok, err := c.ActiveTurn(); return ok, err }},
		{interruptFile, func() (bool, error) { _, ok, err := c.Interrupt(); return ok, err }},
		{closeFile, func() (bool, error) { _, ok, err := c.CloseRequest(); return ok, err }},
		{closedFile, func() (bool, error) { _, ok, err := c.Closed(); return ok, err }},
	}
	for _, ck := range checks {
		ok, err := ck.read()
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		} else if ok {
			r.Controls = append(r.Controls, ck.name)
		}
	}
	names, _ := listNames(c.root)
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			r.TempFiles = append(r.TempFiles, n)
		}
	}
	return r, nil
}

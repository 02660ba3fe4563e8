package channel

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Session is session.json, written by the Sub to make its Pi session resumable.
type Session struct {
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile"`
	CreatedAt   int64  `json:"createdAt"`
}

// Turn is active-turn.json (the Sub's current input) and the body of interrupt.json.
type Turn struct {
	TurnID      string `json:"turnId"`
	CreatedAt   int64  `json:"createdAt"`
	RequestedAt int64  `json:"requestedAt,omitempty"` // set only in interrupt.json
}

// Closure is close.json (a Main's request) or closed.json (the closure fact).
type Closure struct {
	CreatedAt int64  `json:"createdAt"`
	Reason    string `json:"reason"`
}

// Wire shapes, in the on-disk key order both implementations write:
// version, runId, token, body.
type sessionRecord struct {
	Version     int    `json:"version"`
	RunID       string `json:"runId"`
	Token       string `json:"token"`
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile"`
	CreatedAt   int64  `json:"createdAt"`
}

type turnRecord struct {
	Version     int    `json:"version"`
	RunID       string `json:"runId"`
	Token       string `json:"token"`
	TurnID      string `json:"turnId"`
	CreatedAt   int64  `json:"createdAt"`
	RequestedAt int64  `json:"requestedAt,omitempty"`
}

type closureRecord struct {
	Version   int    `json:"version"`
	RunID     string `json:"runId"`
	Token     string `json:"token"`
	CreatedAt int64  `json:"createdAt"`
	Reason    string `json:"reason"`
}

func (c *Channel) writeControl(name string, v any) error {
	data, err := encodeJSON(v)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(c.dir, name), err)
	}
	if len(data) > maxControlBytes {
		return fmt.Errorf("write %s: %d bytes exceeds %d", filepath.Join(c.dir, name), len(data), maxControlBytes)
	}
	if err := writeAtomic(c.root, name, data, c.fault); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(c.dir, name), err)
	}
	return nil
}

// readControl returns false when the file is absent. A file with another
// run's identity, a wrong version or a wrong shape is an error, so callers
// can report it; a caller that must not stall on it may treat it as absent.
func (c *Channel) readControl(name string, v any, check func() error) (bool, error) {
	data, err := readFileAt(c.root, name, maxControlBytes, c.uid)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		err = c.decodeControl(data, v, check)
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", filepath.Join(c.dir, name), err)
	}
	return true, nil
}

func (c *Channel) decodeControl(data []byte, v any, check func() error) error {
	m, err := fields(data)
	if err != nil {
		return err
	}
	if ver, err := safeIntField(m, "version", 1); err != nil || ver != 1 {
		return errors.New("version must be 1")
	}
	if err := checkIdentity(m, c.identity()); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return jsonTerms(err)
	}
	if check != nil {
		return check()
	}
	return nil
}

func (c *Channel) removeControl(name string) error {
	err := unix.Unlinkat(int(c.root.Fd()), name, 0)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", filepath.Join(c.dir, name), err)
	}
	return syncDir(c.root, c.fault)
}

func (c *Channel) ms() int64 { return c.now().UnixMilli() }

// WriteSession records the Sub's Pi session (session.json).
func (c *Channel) WriteSession(sessionID, sessionFile string) error {
	return c.writeControl(sessionName, sessionRecord{1, c.manifest.RunID, c.manifest.Token, sessionID, sessionFile, c.ms()})
}

// Session reads session.json; ok is false when it is absent.
func (c *Channel) Session() (s Session, ok bool, err error) {
	var r sessionRecord
	ok, err = c.readControl(sessionName, &r, func() error {
		if r.SessionID == "" {
			return errors.New("sessionId is empty")
		}
		return nil
	})
	return Session{r.SessionID, r.SessionFile, r.CreatedAt}, ok, err
}

// SetActiveTurn records the Sub's current turn (active-turn.json).
func (c *Channel) SetActiveTurn(turnID string) error {
	return c.writeControl(activeTurnFile, turnRecord{Version: 1, RunID: c.manifest.RunID, Token: c.manifest.Token, TurnID: turnID, CreatedAt: c.ms()})
}

// ActiveTurn reads active-turn.json; ok is false when it is absent.
func (c *Channel) ActiveTurn() (Turn, bool, error) { return c.readTurn(activeTurnFile) }

// ClearActiveTurn removes active-turn.json only if it still names turnID, so a
// stale settle event cannot erase a newer turn.
func (c *Channel) ClearActiveTurn(turnID string) error {
	t, ok, err := c.ActiveTurn()
	if err != nil || !ok || t.TurnID != turnID {
		return err
	}
	return c.removeControl(activeTurnFile)
}

// RequestInterrupt asks the Sub to stop turn t (interrupt.json).
func (c *Channel) RequestInterrupt(t Turn) error {
	return c.writeControl(interruptFile, turnRecord{Version: 1, RunID: c.manifest.RunID, Token: c.manifest.Token, TurnID: t.TurnID, CreatedAt: t.CreatedAt, RequestedAt: c.ms()})
}

// Interrupt reads interrupt.json; ok is false when it is absent.
func (c *Channel) Interrupt() (Turn, bool, error) { return c.readTurn(interruptFile) }

// ConsumeInterrupt removes interrupt.json once the Sub has acted on it.
func (c *Channel) ConsumeInterrupt() error { return c.removeControl(interruptFile) }

func (c *Channel) readTurn(name string) (Turn, bool, error) {
	var r turnRecord
	ok, err := c.readControl(name, &r, func() error {
		if r.TurnID == "" {
			return errors.New("turnId is empty")
		}
		return nil
	})
	return Turn{r.TurnID, r.CreatedAt, r.RequestedAt}, ok, err
}

// RequestClose records the Main's request to close the Sub (close.json).
func (c *Channel) RequestClose(reason string) error {
	return c.writeControl(closeFile, closureRecord{1, c.manifest.RunID, c.manifest.Token, c.ms(), reason})
}

// CloseRequest reads close.json; ok is false when it is absent.
func (c *Channel) CloseRequest() (Closure, bool, error) { return c.readClosure(closeFile) }

// MarkClosed records that the Sub is closed (closed.json). The channel stays
// until Remove succeeds, i.e. until queued Sub→Main messages are received.
func (c *Channel) MarkClosed(reason string) error {
	return c.writeControl(closedFile, closureRecord{1, c.manifest.RunID, c.manifest.Token, c.ms(), reason})
}

// Closed reads closed.json; ok is false when it is absent.
func (c *Channel) Closed() (Closure, bool, error) { return c.readClosure(closedFile) }

func (c *Channel) readClosure(name string) (Closure, bool, error) {
	var r closureRecord
	ok, err := c.readControl(name, &r, nil)
	return Closure{r.CreatedAt, r.Reason}, ok, err
}

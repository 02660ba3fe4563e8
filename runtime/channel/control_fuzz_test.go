package channel

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// withIdentity lets seeds and fuzzed inputs spell the channel's own run id
// and token, which are fresh for every channel: $RUN and $TOKEN stand for them.
func withIdentity(data []byte, c *Channel) []byte {
	data = bytes.ReplaceAll(data, []byte("$RUN"), []byte(c.manifest.RunID))
	return bytes.ReplaceAll(data, []byte("$TOKEN"), []byte(c.manifest.Token))
}

// controlReader reads one control file of a channel; need reports whether
// the field that reader requires is set after a successful read.
type controlReader struct {
	file string
	read func() (ok bool, err error)
	need func() bool
}

// FuzzReadControl writes arbitrary bytes to each control file of a channel
// (session.json, active-turn.json, interrupt.json, close.json, closed.json)
// and reads it back. A read must never panic; a refusal names the file and
// leaves it on disk for inspection; what is accepted carries the channel's
// own run id and token and the field its reader requires.
func FuzzReadControl(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"runId":"$RUN","token":"$TOKEN","sessionId":"s-1","sessionFile":"/p/s.jsonl","createdAt":1700000000000}`,
		`{"version":1,"runId":"$RUN","token":"$TOKEN","turnId":"t-1","createdAt":1,"requestedAt":2}`,
		`{"version":1,"runId":"$RUN","token":"$TOKEN","createdAt":1700000000000,"reason":"done"}`,
		`{"version":1,"runId":"$RUN","token":"$TOKEN","createdAt":1.5,"reason":"done"}`,
		`{"version":1,"runId":"$RUN","token":"$TOKEN","turnId":""}`,
		`{"version":2,"runId":"$RUN","token":"$TOKEN"}`,
		`{"version":1,"runId":"other","token":"$TOKEN"}`,
		`{"version":1,"runId":"$RUN","token":"$TOKEN"} {}`,
		`{"version":1e0,"runId":"$RUN","token":"$TOKEN","reason":null}`,
		`[]`, ``,
	} {
		f.Add([]byte(seed))
	}
	c := newTestChannel(f)
	var sess Session
	var turn Turn
	readers := []controlReader{
		{sessionName, func() (ok bool, err error) { sess, ok, err = c.Session(); return }, func() bool { return sess.SessionID != "" }},
		{activeTurnFile, func() (ok bool, err error) { turn, ok, err = c.ActiveTurn(); return }, func() bool { return turn.TurnID != "" }},
		{interruptFile, func() (ok bool, err error) { turn, ok, err = c.Interrupt(); return }, func() bool { return turn.TurnID != "" }},
		{closeFile, func() (ok bool, err error) { _, ok, err = c.CloseRequest(); return }, func() bool { return true }},
		{closedFile, func() (ok bool, err error) { _, ok, err = c.Closed(); return }, func() bool { return true }},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = withIdentity(data, c)
		m, err := fields(data)
		ours := err == nil && checkIdentity(m, c.identity()) == nil
		for _, r := range readers {
			path := filepath.Join(c.Dir(), r.file)
			safefiletest.Put(t, path, data)
			ok, err := r.read()
			if err != nil {
				safefiletest.Kept(t, err, path, data)
				continue
			}
			if !ok || !ours || !r.need() {
				t.Fatalf("%s accepted (ok=%v) without the channel identity or its required field:\n%s", r.file, ok, data)
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
	})
}

// FuzzParseSequence feeds a <direction>-sequence.json counter to
// parseSequence: never a panic, a refusal names the file, and an accepted
// counter carries the channel identity and is a safe integer of at least 1.
func FuzzParseSequence(f *testing.F) {
	for _, seed := range []string{
		`{"runId":"$RUN","token":"$TOKEN","sequence":7}`,
		`{"runId":"$RUN","token":"$TOKEN","sequence":9007199254740991}`,
		`{"runId":"$RUN","token":"$TOKEN","sequence":9007199254740992}`,
		`{"runId":"$RUN","token":"$TOKEN","sequence":1.0e2}`,
		`{"runId":"$RUN","token":"$TOKEN","sequence":0}`,
		`{"runId":"$RUN","token":"$TOKEN","sequence":"7"}`,
		`{"runId":"$RUN","token":"x","sequence":7}`,
		`{"runId":"$RUN","token":"$TOKEN","sequence":7}]`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	c := newTestChannel(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = withIdentity(data, c)
		for _, d := range []Direction{ToMain, ToSub} {
			seq, err := c.parseSequence(d, data)
			if err != nil {
				if !strings.Contains(err.Error(), sequenceFile(d)) {
					t.Fatalf("refusal does not name %s: %v", sequenceFile(d), err)
				}
				continue
			}
			m, ferr := fields(data)
			if ferr != nil || checkIdentity(m, c.identity()) != nil || seq < 1 || seq > maxSafeInteger {
				t.Fatalf("accepted sequence %d from a counter it should refuse:\n%s", seq, data)
			}
		}
	})
}

package subs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// TestCorruptRunRecordIsolated: one unreadable run record is reported with
// its path, and list and talk go on with the Main's other runs.
func TestCorruptRunRecordIsolated(t *testing.T) {
	cases := append([]safefiletest.Case{{Name: "bad-json", Make: func(tb testing.TB, path string) {
		os.WriteFile(path, []byte(`{"runId": `), 0o600)
	}}}, safefiletest.Cases(maxRecordBytes)...)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			f := newFixture(t)
			good := f.delegate(mainID, "writer", "Good")
			bad := f.delegate(mainID, "oracle", "Bad")
			path := f.runtime().Store.runPath(mainID, bad.RunID)
			c.Make(t, path)

			var l Listing
			var err error
			safefiletest.Within(t, func() { l, err = f.runtime().List(context.Background(), mainID, true) })
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(l.Open) != 1 || l.Open[0].RunID != good.RunID {
				t.Errorf("open = %+v, want only the good run", l.Open)
			}
			if len(l.Problems) != 1 || !strings.Contains(l.Problems[0], path) {
				t.Errorf("problems = %q, want one naming %s", l.Problems, path)
			}
			if !strings.Contains(l.Text(), path) {
				t.Errorf("text does not name the record:\n%s", l.Text())
			}
			if _, err := f.runtime().Talk(mainID, good.RunID, "hello"); err != nil {
				t.Errorf("talk to the good run: %v", err)
			}
			_, err = f.runtime().Talk(mainID, bad.RunID, "hello")
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("talk to the corrupt run: %v, want an error naming %s", err, path)
			}
		})
	}
}

// TestHostileStateFiles: a binding or token file replaced by a FIFO,
// /dev/zero or an oversized file is refused with its path, without blocking.
func TestHostileStateFiles(t *testing.T) {
	for _, c := range safefiletest.Cases(maxRecordBytes) {
		t.Run("binding/"+c.Name, func(t *testing.T) {
			f := newFixture(t)
			s := f.runtime().Store
			if err := s.SaveBinding(Binding{MainSessionID: mainID, ProfileName: "review", RunID: "r"}); err != nil {
				t.Fatal(err)
			}
			path := s.bindingPath(mainID, "review")
			c.Make(t, path)
			var err error
			safefiletest.Within(t, func() { _, _, err = s.LoadBinding(mainID, "review") })
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("LoadBinding: %v, want an error naming %s", err, path)
			}
		})
	}
	for _, c := range safefiletest.Cases(4096) {
		t.Run("token/"+c.Name, func(t *testing.T) {
			f := newFixture(t)
			d := f.delegate(mainID, "writer", "W")
			path := filepath.Join(f.run(d.RunID).ChannelDir, tokenFileName)
			c.Make(t, path)
			var err error
			safefiletest.Within(t, func() { _, err = f.runtime().Talk(mainID, d.RunID, "hi") })
			if err == nil || !strings.Contains(fmt.Sprint(err), path) {
				t.Errorf("talk: %v, want an error naming %s", err, path)
			}
		})
	}
}

// TestTextEscapesRecordValues: titles, purposes, paths and session ids
// come from run records on disk; the text results never print them raw.
func TestTextEscapesRecordValues(t *testing.T) {
	const bad = "t\x1b]0;x\x07\n- forged line\xff"
	l := Listing{
		Open:      []OpenSub{{RunID: "12345678-aaaa", Title: bad, Profile: bad, Status: "idle", SessionPersistence: "persistent", Purpose: bad}},
		Resumable: []Resumable{{SessionID: bad, Title: bad, Cwd: bad, Purpose: bad}},
		Problems:  []string{bad},
	}
	texts := []string{l.Text(), Delegation{Title: bad, Profile: bad, RunID: "12345678", SessionID: bad}.Text(),
		Message{Title: bad}.Text(), Interruption{Title: bad}.Text(), Closure{Title: bad}.Text()}
	for _, s := range texts {
		for _, r := range s {
			if (r < 0x20 && r != '\n') || r == 0x7f || r == 0xfffd {
				t.Errorf("raw %U in %q", r, s)
				break
			}
		}
		if strings.Contains(s, "\n- forged") {
			t.Errorf("forged line in %q", s)
		}
	}
}

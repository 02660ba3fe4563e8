package channel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testProfile = `{"version":1,"name":"review","tools":["read","grep"],"source":"global","sourcePath":"/p/review/config.json","resolvedSkills":[],"resolvedExtensions":[]}`

func testManifest(runID string) Manifest {
	return Manifest{RunID: runID, MainSessionID: "main-session", Title: "Review auth", Task: "review <the> flow & report",
		Cwd: "/work", Profile: json.RawMessage(testProfile)}
}

// newTestChannel creates a channel under a private temp root.
func newTestChannel(t testing.TB) *Channel {
	t.Helper()
	root := filepath.Join(t.TempDir(), "pi-facets-test")
	c, err := Create(root, testManifest(NewID()))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func reopen(t testing.TB, c *Channel) *Channel {
	t.Helper()
	o, err := Open(c.Dir(), c.Manifest().Token)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func inboxNames(t testing.TB, c *Channel, d Direction) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(c.Dir(), string(d)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// tempFiles lists the temp files in the channel directory (counter writes)
// and in the inbox of d.
func tempFiles(t testing.TB, c *Channel, d Direction) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{c.Dir(), filepath.Join(c.Dir(), string(d))} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".tmp") {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// mustSend sends text in direction d, failing the test if it cannot.
func mustSend(t testing.TB, c *Channel, d Direction, text string) Message {
	t.Helper()
	m, err := c.Send(d, text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func texts(ms []Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

// startWatcher starts a watcher of d that hands each woken channel to rx
// (a wake by moved-in files alone to rx.ScanMoved, unless opts has a
// ScanMoved of its own), adds chans to it and closes it when the test ends.
func startWatcher(tb testing.TB, d Direction, rx *Receiver, opts WatchOptions, chans ...*Channel) *Watcher {
	tb.Helper()
	if opts.ScanMoved == nil {
		opts.ScanMoved = func(c *Channel, names []string) { rx.ScanMoved(c, names) }
	}
	w, err := NewWatcher(d, func(c *Channel) { rx.Scan(c) }, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	for _, c := range chans {
		w.Add(c)
	}
	return w
}

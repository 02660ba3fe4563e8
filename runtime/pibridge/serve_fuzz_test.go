package pibridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer collects Serve's output; the watcher may still report while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FuzzServeRequests feeds a Sub's or a Main's bridge arbitrary JSON lines
// on stdin, as a broken or hostile extension could send them. Serve must never panic
// and must return once stdin ends; everything it writes is a JSON event of
// a known type; a line that is not a request is reported as a problem, not
// dropped silently; and each send or sync request gets exactly one result
// with its id.
func FuzzServeRequests(f *testing.F) {
	for _, seed := range []string{
		`{"op":"ready"}` + "\n" + `{"op":"send","id":1,"text":"found it"}` + "\n" + `{"op":"sync","id":2}`,
		`{"op":"turn-start"}` + "\n" + `{"op":"turn-end"}` + "\n" + `{"op":"settled","aborted":true}`,
		`{"op":"session","sessionId":"s-1","sessionFile":"/p/s.jsonl"}` + "\n" + `{"op":"quit"}`,
		`{"op":"receipt","text":"[Facets delivery v1] {\"direction\":\"to-sub\",\"runId\":\"r\",\"messageId\":\"m\"}\n\nhi"}`,
		`{"op":"release","text":"x"}` + "\n" + `{"op":"inflight","text":""}` + "\n" + `{"op":"scan","closed":"nope"}`,
		`{"op":"send","id":-1,"text":""}` + "\r\n" + `{"op":"send","id":1.5}` + "\n" + `{"op":"nope"}`,
		"not json\n\n[]\nnull\n{\"op\":\"sync\",\"id\":9223372036854775807}",
		`{"op":"send","id":3,"text":"\ud800\u0000"}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, main bool) {
		root := privateRoot(t)
		ch := newChannel(t, root, "main-1")
		opts := ServeOptions{Role: "sub", ChannelDir: ch.Dir(), Token: ch.Manifest().Token}
		if main {
			opts = ServeOptions{Role: "main", Root: root, MainSession: "main-1"}
		}
		var out lockedBuffer
		done := make(chan error, 1)
		go func() {
			done <- Serve(context.Background(), bytes.NewReader(in), &out, opts)
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Serve did not return after stdin ended")
		}

		wantResults := map[int64]int{}
		badLines := 0
		sc := bufio.NewScanner(bytes.NewReader(in))
		sc.Buffer(nil, len(in)+1)
		for sc.Scan() {
			var req request
			if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
				badLines++
				continue
			}
			if req.Op == "send" || req.Op == "sync" {
				wantResults[req.ID]++
			}
		}
		results := map[int64]int{}
		problems := 0
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			var e event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("output line is not an event: %q", line)
			}
			switch e.Type {
			case "result":
				results[e.ID]++
			case "problem":
				if strings.HasPrefix(e.Error, "bad bridge request: ") {
					problems++
				}
			case "delivery", "close", "interrupt":
			default:
				t.Fatalf("event of unknown type: %q", line)
			}
		}
		if (badLines > 0) != (problems > 0) {
			t.Fatalf("%d unparsable request lines, %d reported", badLines, problems)
		}
		if len(results) != len(wantResults) {
			t.Fatalf("results by id %v, want %v", results, wantResults)
		}
		for id, n := range wantResults {
			if results[id] != n {
				t.Fatalf("results by id %v, want %v", results, wantResults)
			}
		}
	})
}

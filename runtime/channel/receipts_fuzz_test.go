package channel

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// FuzzOpenFileReceipts feeds arbitrary bytes to the receipt log loader. It
// must never panic; a corrupt log is refused with an error naming the file
// and is left on disk as it was; an accepted log drops only a torn final
// line, knows every receipt it holds, and still opens after one more
// receipt is appended.
func FuzzOpenFileReceipts(f *testing.F) {
	for _, seed := range []string{
		`{"direction":"to-main","runId":"r","messageId":"m-1"}` + "\n",
		`{"direction":"to-sub","runId":"r","sequence":9,"waiting":["m-3","m-5"]}` + "\n" + `{"direction":"to-sub","runId":"r","messageId":"m-3"}` + "\n",
		`{"direction":"to-main","runId":"r","messageId":"m-1"}` + "\n" + `{"direction":"to-main","ru`,
		`{"direction":"to-main","runId":"r","messageId":"m-1","sequence":2}` + "\n",
		`{"direction":"to-main","runId":"r","sequence":2,"waiting":[""]}` + "\n",
		`{"direction":"sideways","runId":"r","messageId":"m"}` + "\n",
		`{"direction":"to-main","runId":"r","sequence":1.5}` + "\n",
		"\n", "", "null\n",
		`{"receiptLog":2}` + "\n" + `{"direction":"to-main","runId":"r","messageId":"m-1"}` + "\n",
		`{"receiptLog":3}` + "\n" + `{"direction":"to-main","runId":"r","messageId":"m-1","v3":true}` + "\n",
		`{"receiptLog":0}` + "\n", `{"receiptLog":2}`, `{"receiptLog":"2"}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "receipts.jsonl")
		safefiletest.Put(t, path, data)
		s, err := OpenFileReceipts(path)
		if err != nil {
			safefiletest.Kept(t, err, path, data)
			return
		}
		kept := data[:bytes.LastIndexByte(data, '\n')+1]
		if len(kept) == 0 {
			kept = []byte(`{"receiptLog":2}` + "\n") // a new log starts with its format
		}
		if on, err := os.ReadFile(path); err != nil || !bytes.Equal(on, kept) {
			s.Close()
			t.Fatalf("accepted log left as %q, want %q (only a torn final line dropped): %v", on, kept, err)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(kept, []byte("\n")), []byte("\n")) {
			var l logLine
			if json.Unmarshal(line, &l) != nil || l.MessageID == "" {
				continue
			}
			if ok, err := s.Has(Receipt{Direction: l.Direction, RunID: l.RunID, MessageID: l.MessageID}); !ok || err != nil {
				s.Close()
				t.Fatalf("receipt %s of the log is not known: %v", line, err)
			}
		}
		extra := Receipt{Direction: ToMain, RunID: "fuzz-run", MessageID: "fuzz-message"}
		if err := s.Record(extra); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := OpenFileReceipts(path)
		if err != nil {
			t.Fatalf("an accepted log with one receipt appended is refused: %v", err)
		}
		defer again.Close()
		if ok, err := again.Has(extra); !ok || err != nil {
			t.Fatalf("appended receipt lost on reopen: %v", err)
		}
	})
}

package herdr

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzVisibilityState feeds the plugin's saved choice (visibility.json in
// $HERDR_PLUGIN_STATE_DIR) to Visibility.load. It must never panic; a
// corrupt file is refused with an error naming it and saying how to reset
// it, and is left on disk; an accepted state survives save and load.
func FuzzVisibilityState(f *testing.F) {
	for _, seed := range []string{`{"showSubs":true}` + "\n", `{"showSubs":false}`, `{}`, `{"showSubs":1}`, `null`, `[]`, ``, `{"showSubs":true}{`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v := Visibility{StateDir: t.TempDir()}
		path := filepath.Join(v.StateDir, visibilityFile)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := v.load()
		if err != nil {
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "delete it to reset") {
				t.Fatalf("refusal does not name the file or say how to reset it: %v", err)
			}
			if on, rerr := os.ReadFile(path); rerr != nil || !bytes.Equal(on, data) {
				t.Fatalf("refused state is no longer on disk as it was: %v", rerr)
			}
			return
		}
		var want visibilityState
		if json.Unmarshal(data, &want) != nil || st != want {
			t.Fatalf("loaded %+v from %q", st, data)
		}
		if err := v.save(st); err != nil {
			t.Fatal(err)
		}
		if back, err := v.load(); err != nil || back != st {
			t.Fatalf("saved %+v, loaded %+v, %v", st, back, err)
		}
	})
}

package herdr

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
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
		safefiletest.Put(t, path, data)
		st, err := v.load()
		if err != nil {
			safefiletest.Kept(t, err, path, data)
			if !strings.Contains(err.Error(), "delete it to reset") {
				t.Fatalf("refusal does not say how to reset the file: %v", err)
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

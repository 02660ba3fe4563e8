package channel

import (
	"testing"
	"time"
)

// TestWatcherDefaultsMatchReference pins the watcher's default timings: a
// 20 ms coalescing window and a 5 s fallback rescan, applied when the
// options leave them zero.
func TestWatcherDefaultsMatchReference(t *testing.T) {
	if DefaultCoalesce != 20*time.Millisecond || DefaultRescan != 5*time.Second {
		t.Fatalf("defaults are %v/%v, want 20ms/5s", DefaultCoalesce, DefaultRescan)
	}
	w, err := NewWatcher(ToMain, func(*Channel) {}, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.opts.Coalesce != 20*time.Millisecond || w.opts.Rescan != 5*time.Second {
		t.Errorf("zero options became %v/%v, want 20ms/5s", w.opts.Coalesce, w.opts.Rescan)
	}
}

package channel

import (
	"testing"
	"time"
)

// TestWatcherDefaultsMatchReference pins the 5 s
// fallback rescan, applied when the options leave it zero. (There is no
// coalescing window: see TestWatcherBurstCostsFewScans.)
func TestWatcherDefaultsMatchReference(t *testing.T) {
	if DefaultRescan != 5*time.Second {
		t.Fatalf("default rescan is %v, want 5s", DefaultRescan)
	}
	w, err := NewWatcher(ToMain, func(*Channel) {}, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.opts.Rescan != 5*time.Second {
		t.Errorf("zero options became %v, want 5s", w.opts.Rescan)
	}
}

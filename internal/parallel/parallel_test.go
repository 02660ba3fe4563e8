package parallel

import (
	"sync"
	"testing"
)

// TestForCallsEachIndexOnce: every index is called exactly once, by a
// worker number in range, whatever the worker count.
func TestForCallsEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {7, 1}, {7, 0}, {100, 3}, {3, 8}} {
		var mu sync.Mutex
		calls := make([]int, tc.n)
		workerSeen := map[int]bool{}
		For(tc.n, tc.workers, func(w, i int) {
			mu.Lock()
			defer mu.Unlock()
			calls[i]++
			workerSeen[w] = true
		})
		for i, c := range calls {
			if c != 1 {
				t.Errorf("n=%d workers=%d: index %d called %d times", tc.n, tc.workers, i, c)
			}
		}
		for w := range workerSeen {
			if w < 0 || w >= max(1, min(tc.workers, tc.n)) {
				t.Errorf("n=%d workers=%d: worker number %d out of range", tc.n, tc.workers, w)
			}
		}
	}
}

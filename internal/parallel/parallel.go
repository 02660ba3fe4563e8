// Package parallel runs independent, indexed work items on a few
// goroutines.
package parallel

import (
	"sync"
	"sync/atomic"
)

// For calls fn(w, i) once for every i below n, on workers goroutines
// numbered w = 0..workers-1, and returns when all calls have returned.
// Workers take the next index from a shared counter rather than a channel:
// the items are small (one file each), and a channel hand-off per item
// costs more scheduler wake-ups than the item itself. workers below 2 runs
// everything on the calling goroutine.
func For(n, workers int, fn func(w, i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	workers = min(workers, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(w, i)
			}
		}()
	}
	wg.Wait()
}

package profiles

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// forEach calls fn for every index below n on up to GOMAXPROCS goroutines.
// Discovery reads thousands of small files and is bound by system calls,
// which every core can make at once; a short list is not worth a goroutine.
func forEach(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), 8, (n+15)/16)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

package profiles

import (
	"runtime"

	"github.com/facets-dev/facets/internal/parallel"
)

// forEach calls fn for every index below n on up to GOMAXPROCS goroutines.
// Discovery reads thousands of small files and is bound by system calls,
// which every core can make at once; a short list is not worth a goroutine.
func forEach(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), 8, (n+15)/16)
	parallel.For(n, workers, func(_, i int) { fn(i) })
}

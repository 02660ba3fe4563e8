package main

import (
	"os"
	"runtime/debug"
)

// compileHeapLimit bounds the heap while a compile runs with the collector
// otherwise off. A compile of 1,000 profiles and roles allocates about
// 23 MB and never reaches it; a larger tree collects as it nears the limit.
const compileHeapLimit = 64 << 20

// checkHeapLimit is check's soft memory limit, under which its collector
// stays off. check keeps only what its diagnostics need
// (compiler.Options.DiagnosticsOnly), some 3-4 MB for 10,000 profiles and
// roles: a tree of 1,000 never collects, and a larger one collects only as
// it nears the limit, each time freeing most of the heap. At 10k + 10k,
// against collecting at GOGC=50: 0.88x the wall time for 35 instead of 23
// MiB; 32 MiB gained nothing more, and with no limit at all the heap's
// growth cost more than collecting (105 MiB, 1.06x). docs/performance.md
// has the figures.
const checkHeapLimit = 24 << 20

// lazyGC sets the garbage collector for a compile and returns the function
// that restores the previous settings: the collector off under a soft
// memory limit, the garbage freed at exit anyway (collecting it cost ~18%
// of a compile's CPU). A compile that builds a manifest is bounded by
// compileHeapLimit, a diagnostics-only one (check) by checkHeapLimit. GOGC
// or GOMEMLIMIT set by the user win.
func lazyGC(diagnosticsOnly bool) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	heap := int64(compileHeapLimit)
	if diagnosticsOnly {
		heap = checkHeapLimit
	}
	limit := debug.SetMemoryLimit(heap)
	percent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

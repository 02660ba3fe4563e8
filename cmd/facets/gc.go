package main

import (
	"os"
	"runtime/debug"
)

// compileHeapLimit bounds the heap while a compile runs with the collector
// otherwise off. A check of 1,000 profiles and roles allocates about 23 MB
// and never reaches it; a larger tree collects as it nears the limit.
const compileHeapLimit = 64 << 20

// lazyGC turns the garbage collector off for a compile, whose garbage is
// freed at exit anyway (collecting it cost ~18% of check's CPU), with a
// soft heap limit in its place; it returns the function that restores
// the previous settings. GOGC or GOMEMLIMIT set by the user win.
func lazyGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(compileHeapLimit)
	percent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

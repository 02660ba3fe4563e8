package main

import (
	"os"
	"runtime/debug"
)

// compileHeapLimit bounds the heap while a compile runs with the collector
// otherwise off. A compile of 1,000 profiles and roles allocates about
// 23 MB and never reaches it; a larger tree collects as it nears the limit.
const compileHeapLimit = 64 << 20

// checkGCPercent is check's collector setting. check keeps only what its
// diagnostics need (compiler.Options.DiagnosticsOnly), some 3-4 MB for
// 10,000 profiles and roles, so collecting often keeps its peak RSS near
// the binary's own: 24 MiB at 10k + 10k (15 MiB of it the binary's pages)
// against 72 MiB with the collector off and 25.6 MiB with GOGC=100.
// Lower settings or a soft limit near the live heap gained 1-4 MiB for up
// to twice the CPU when the live heap was twice as large.
const checkGCPercent = 50

// lazyGC sets the garbage collector for a compile and returns the
// function that restores the previous settings. A compile that builds a
// manifest runs with the collector off, its garbage freed at exit anyway
// (collecting it cost ~18% of its CPU), under a soft heap limit; a
// diagnostics-only one (check) collects at checkGCPercent. GOGC or
// GOMEMLIMIT set by the user win.
func lazyGC(diagnosticsOnly bool) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	if diagnosticsOnly {
		percent := debug.SetGCPercent(checkGCPercent)
		return func() { debug.SetGCPercent(percent) }
	}
	limit := debug.SetMemoryLimit(compileHeapLimit)
	percent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

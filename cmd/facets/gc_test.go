package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestLazyGC: check and compile run with the collector off under their own
// soft memory limits (check's keeps a 10k + 10k tree near 35 MiB), and the
// settings before are restored afterwards.
func TestLazyGC(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Fatal("run this test without GOGC and GOMEMLIMIT: lazyGC leaves the user's settings alone")
	}
	percent := debug.SetGCPercent(100)
	defer debug.SetGCPercent(percent)
	for _, tc := range []struct {
		name   string
		check  bool
		wantMB int64
	}{{"check", true, 24}, {"compile", false, 64}} {
		limit := debug.SetMemoryLimit(-1)
		restore := lazyGC(tc.check)
		gotPercent, gotLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
		restore()
		if gotPercent != -1 || gotLimit != tc.wantMB<<20 {
			t.Errorf("%s: GC percent %d, memory limit %d MiB; want the collector off under %d MiB", tc.name, gotPercent, gotLimit>>20, tc.wantMB)
		}
		if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != 100 || l != limit {
			t.Errorf("%s: after restore GC percent %d, limit %d; want 100 and %d", tc.name, p, l, limit)
		}
	}
}

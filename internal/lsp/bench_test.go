package lsp

import (
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/facets-dev/facets/compiler"
	"github.com/facets-dev/facets/internal/benchtree"
	"github.com/facets-dev/facets/profiles"
)

// BenchmarkKeystroke measures what an editor waits for after a keystroke
// in a profile's config.json, in a tree of 100 profiles and 100 roles
// (internal/benchtree): from sending didChange to receiving the file's
// new diagnostics, a whole compile of the tree with the buffer in place of
// the file. The buffer alternates between a broken and a valid document so
// that every change publishes. It reports the median; the target is under
// 20 ms.
func BenchmarkKeystroke(b *testing.B) {
	root := b.TempDir()
	if err := benchtree.Write(root, 100); err != nil {
		b.Fatal(err)
	}
	env := profiles.Env{AgentDir: filepath.Join(root, "agent"), Home: filepath.Join(root, "home"), Cwd: root}
	// As facets lsp configures it: with the repository check of an
	// untrusted project (this tree is in no repository, so each pass only
	// looks for one).
	cfg := Config{Options: func(string) (compiler.Options, error) { return compiler.Options{Env: env}, nil },
		Repository: func(root string) (compiler.Options, error) {
			return compiler.Sources{Cwd: root, ProjectOnly: true}.Options(func(string) string { return "" }, env.Home)
		}}
	path := filepath.Join(root, "agent/facets/profiles/profile-0042/config.json")
	valid := `{"version": 1, "name": "profile-0042", "tools": ["read"]}`
	broken := `{"version": 1, "name": "profile-0042", "tools": ["read"], "invocation": "sometimes"}`
	c := startServer(b, cfg)
	c.initialize("")
	c.open(path, valid)
	c.diagnostics(path)
	var times []time.Duration
	version := 1
	cpu0 := cpuTime(b)
	for b.Loop() {
		version++
		text := broken
		if version%2 == 1 {
			text = valid
		}
		start := time.Now()
		c.change(path, version, text)
		c.diagnostics(path)
		times = append(times, time.Since(start))
	}
	cpu := cpuTime(b) - cpu0
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms/median")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "ms/p99")
	// CPU time per keystroke (the whole process: server and client), the
	// figure that stays meaningful on a loaded machine.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(times)), "cpu-ms/op")
	c.stop()
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package subs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/facets-dev/facets/runtime/channel"
)

// leftoverTree writes 100 leftovers under dir for 25 Mains: per Main two
// open runs whose channels are gone, one channel without a record (with a
// message for the Main) and one stale binding. No surface is involved.
func leftoverTree(tb testing.TB, dir string) *Runtime {
	tb.Helper()
	rt := &Runtime{Store: Store{Dir: filepath.Join(dir, "state")}, ChannelRoot: filepath.Join(dir, "run"),
		Now: func() time.Time { return time.Now().Add(time.Hour) }}
	for m := range 25 {
		main := fmt.Sprintf("main-%02d", m)
		for r := range 2 {
			run := &Run{Version: RunVersion, RunID: fmt.Sprintf("run-%d", r), MainSessionID: main, ProfileName: "writer",
				ChannelDir: filepath.Join(dir, "gone", main, fmt.Sprint(r)), CreatedAt: 1}
			if err := rt.Store.SaveRun(run); err != nil {
				tb.Fatal(err)
			}
		}
		ch, err := channel.Create(rt.ChannelRoot, channel.Manifest{MainSessionID: main, Profile: []byte(benchProfile)})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := ch.Send(channel.ToMain, "kept"); err != nil {
			tb.Fatal(err)
		}
		os.WriteFile(filepath.Join(ch.Dir(), "token"), []byte("t\n"), 0o600)
		ch.Close()
		if err := rt.Store.SaveBinding(Binding{MainSessionID: main, ProfileName: "p", RunID: "gone"}); err != nil {
			tb.Fatal(err)
		}
	}
	return rt
}

const benchProfile = `{"version":1,"name":"review","tools":["read"],"source":"global","sourcePath":"/p/review/config.json","resolvedSkills":[],"resolvedExtensions":[]}`

// BenchmarkGc100Leftovers times gc's dry run, the startup count and
// gc --apply over 100 leftovers of 25 Mains.
func BenchmarkGc100Leftovers(b *testing.B) {
	ctx := context.Background()
	b.Run("dry-run", func(b *testing.B) {
		rt := leftoverTree(b, b.TempDir())
		for b.Loop() {
			if c, err := rt.GC(ctx, false); err != nil || len(c.Leftovers) != 100 {
				b.Fatalf("%d leftovers, %v", len(c.Leftovers), err)
			}
		}
	})
	b.Run("startup-count", func(b *testing.B) {
		rt := leftoverTree(b, b.TempDir())
		for b.Loop() {
			if n := rt.Store.CountLeftovers(rt.ChannelRoot, time.Now().Add(time.Hour)); n != 100 {
				b.Fatalf("count %d", n)
			}
		}
	})
	b.Run("apply", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			rt := leftoverTree(b, b.TempDir())
			b.StartTimer()
			if c, err := rt.GC(ctx, true); err != nil || c.Failed() != nil || len(c.Leftovers) != 100 {
				b.Fatalf("%d leftovers, %v %v", len(c.Leftovers), err, c.Failed())
			}
		}
	})
}

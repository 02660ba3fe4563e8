package subs

import (
	"context"
	"testing"

	"github.com/facets-dev/facets/runtime/launch"
)

// BenchmarkArgs measures building a Sub's pi argv and env.
func BenchmarkArgs(b *testing.B) {
	m := exampleManifest(b)
	spec := launch.Spec{Profile: profileNamed(b, m, "writer"), Bridge: testBridge, Trusted: true, Title: "Write the README"}
	b.ReportAllocs()
	for b.Loop() {
		_ = spec.Args()
		_ = launch.Env("/run/user/1000/pi-facets-1000/main/run")
	}
}

// BenchmarkDelegateClose measures one delegate and its close through the
// fake herdr: eight herdr processes plus channel and state writes.
func BenchmarkDelegateClose(b *testing.B) {
	f := newFixture(b)
	rt := f.runtime()
	ctx := context.Background()
	for b.Loop() {
		d, err := rt.Delegate(ctx, DelegateRequest{Manifest: f.manifest, MainSessionID: mainID, Profile: "writer", Title: "bench", Task: "x"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rt.Close(ctx, mainID, d.RunID, ""); err != nil {
			b.Fatal(err)
		}
	}
}

package pibridge

import (
	"io"
	"testing"
	"time"

	"github.com/facets-dev/facets/runtime/channel"
)

// TestServeHoldsPresenceLocks: a Sub's serve holds its channel's presence
// lock from the start; a Main's holds the Main's once the extension has
// said which session it runs (none: ephemeral), and both locks are free
// once serve has returned.
func TestServeHoldsPresenceLocks(t *testing.T) {
	root := privateRoot(t)
	ch := newChannel(t, root, "m")
	sub := startSubServe(t, ch)
	sub.quiet()
	if p, err := channel.SubPresence(ch.Dir()); err != nil || p != channel.PresenceLive {
		t.Errorf("Sub presence while serving: %v %v", p, err)
	}
	for _, tc := range []struct {
		file string
		want channel.MainLease
	}{
		{"", channel.MainLease{Ephemeral: true}},
		{"/sessions/m.jsonl", channel.MainLease{SessionFile: "/sessions/m.jsonl"}},
	} {
		inR, inW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- Serve(t.Context(), inR, io.Discard, ServeOptions{Role: "main", Root: root, MainSession: "m", Discover: time.Hour})
		}()
		io.WriteString(inW, `{"op":"session","sessionId":"m","sessionFile":"`+tc.file+`"}`+"\n")
		io.WriteString(inW, `{"op":"sync","id":1}`+"\n") // answered after the session request
		deadline := time.Now().Add(10 * time.Second)
		for p, _, _ := channel.MainPresence(root, "m"); p != channel.PresenceLive; p, _, _ = channel.MainPresence(root, "m") {
			if time.Now().After(deadline) {
				t.Fatalf("the Main's presence lock was never taken")
			}
			time.Sleep(10 * time.Millisecond)
		}
		inW.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		p, lease, err := channel.MainPresence(root, "m")
		if err != nil || p != channel.PresenceExited || lease != tc.want {
			t.Errorf("after serve (file %q): %v %+v %v; want exited with %+v", tc.file, p, lease, err, tc.want)
		}
	}
}

// TestHasRunsCountsChannelsOnly: a Main whose folder holds only its
// presence file (it served once, its runs are gone) has no runs to serve.
func TestHasRunsCountsChannelsOnly(t *testing.T) {
	root := privateRoot(t)
	if HasRuns(root, "m") {
		t.Error("no folder: has runs")
	}
	release, err := channel.HoldMainPresence(root, "m", channel.MainLease{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	release()
	if HasRuns(root, "m") {
		t.Error("only the presence file: has runs")
	}
	newChannel(t, root, "m")
	if !HasRuns(root, "m") {
		t.Error("a channel: no runs")
	}
}

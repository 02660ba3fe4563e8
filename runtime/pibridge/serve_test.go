package pibridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facets-dev/facets/compiler/manifest"
	"github.com/facets-dev/facets/runtime/channel"
)

// bridge drives Serve the way the extension does: JSON lines both ways.
type bridge struct {
	t    *testing.T
	in   *io.PipeWriter
	evs  chan event
	done chan error

	syncID int64 // ids of sync requests count up from 1000
}

func startServe(t *testing.T, opts ServeOptions) *bridge {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	b := &bridge{t: t, in: inW, evs: make(chan event, 64), done: make(chan error, 1), syncID: 1000}
	go func() {
		b.done <- Serve(context.Background(), inR, outW, opts)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var e event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("bad event %q: %v", sc.Text(), err)
				continue
			}
			b.evs <- e
		}
		close(b.evs)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case err := <-b.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return after stdin closed")
		}
	})
	return b
}

func (b *bridge) send(req request) {
	b.t.Helper()
	data, _ := json.Marshal(req)
	if _, err := b.in.Write(append(data, '\n')); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bridge) next(typ string) event {
	b.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-b.evs:
			if !ok {
				b.t.Fatalf("Serve ended while waiting for %s", typ)
			}
			if e.Type == typ {
				return e
			}
			if e.Type == "problem" {
				b.t.Errorf("problem: %s", e.Error)
			}
		case <-timeout:
			b.t.Fatalf("no %s event within 10s", typ)
		}
	}
}

// quiet is a barrier that checks nothing happened: the sync request makes
// Serve scan every channel once and answer, so any event that state written
// before the call would cause comes before the answer.
func (b *bridge) quiet() {
	b.t.Helper()
	b.syncID++
	id := b.syncID
	b.send(request{Op: "sync", ID: id})
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-b.evs:
			if !ok {
				b.t.Fatal("Serve ended while waiting for the sync answer")
			}
			if e.Type == "result" && e.ID == id {
				return
			}
			b.t.Errorf("unexpected event %+v", e)
		case <-timeout:
			b.t.Fatal("no sync answer within 10s")
		}
	}
}

func newChannel(t *testing.T, root, mainSession string) *channel.Channel {
	t.Helper()
	ch, err := channel.Create(root, channel.Manifest{MainSessionID: mainSession, Title: "T", Task: "task", Cwd: "/",
		Profile: json.RawMessage(`{"version":1,"name":"w","tools":["read"],"source":"global","sourcePath":"/p","resolvedSkills":[],"resolvedExtensions":[]}`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	return ch
}

// mustSend queues text on ch in direction d and fails the test if it cannot.
func mustSend(t *testing.T, ch *channel.Channel, d channel.Direction, text string) channel.Message {
	t.Helper()
	m, err := ch.Send(d, text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// startSubServe starts the bridge of the Sub that owns ch.
func startSubServe(t *testing.T, ch *channel.Channel) *bridge {
	t.Helper()
	return startServe(t, ServeOptions{Role: "sub", ChannelDir: ch.Dir(), Token: ch.Manifest().Token})
}

// privateRoot is a channel root the channel package accepts: it refuses
// roots other users could enter.
func privateRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rt")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

func waitEmpty(t *testing.T, ch *channel.Channel, d channel.Direction) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, _, err := ch.Pending(d)
		if err == nil && len(msgs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s inbox not emptied: %v %v", d, msgs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeSub(t *testing.T) {
	ch := newChannel(t, privateRoot(t), "main-1")
	m := mustSend(t, ch, channel.ToSub, "hello sub")
	b := startSubServe(t, ch)
	b.quiet() // nothing is delivered before ready
	b.send(request{Op: "ready"})
	d := b.next("delivery")
	if want := channel.FormatDeliveryHeader(m.Receipt()) + "[Facets Main message]\nMain says:\nhello sub"; d.Text != want {
		t.Errorf("delivery = %q, want %q", d.Text, want)
	}
	b.send(request{Op: "scan"})
	b.quiet() // in flight: not offered twice
	b.send(request{Op: "receipt", Text: d.Text})
	waitEmpty(t, ch, channel.ToSub)

	b.send(request{Op: "send", ID: 7, Text: "done"})
	r := b.next("result")
	if r.ID != 7 || r.Error != "" || r.MessageID == "" || r.Text != SubTalkQueued {
		t.Fatalf("send result = %+v", r)
	}
	if msgs, _, _ := ch.Pending(channel.ToMain); len(msgs) != 1 || msgs[0].Text != "done" || msgs[0].ID != r.MessageID {
		t.Errorf("to-main = %+v", msgs)
	}

	b.send(request{Op: "turn-start"})
	var turn channel.Turn
	for deadline := time.Now().Add(5 * time.Second); ; {
		t2, ok, _ := ch.ActiveTurn()
		if ok {
			turn = t2
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("turn-start wrote no active-turn.json")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := ch.RequestInterrupt(channel.Turn{TurnID: "stale"}); err != nil {
		t.Fatal(err)
	}
	b.quiet() // an interrupt for another turn is dropped
	if err := ch.RequestInterrupt(turn); err != nil {
		t.Fatal(err)
	}
	b.next("interrupt")
	b.send(request{Op: "turn-end"})
	if err := ch.RequestClose("done with you"); err != nil {
		t.Fatal(err)
	}
	if c := b.next("close"); c.Reason != "done with you" {
		t.Errorf("close reason = %q", c.Reason)
	}
	b.send(request{Op: "quit"})
	b.quiet()
	if _, closed, _ := ch.Closed(); closed {
		t.Errorf("a Sub closed by close_sub must not also report a manual close")
	}
	if _, ok, _ := ch.ActiveTurn(); ok {
		t.Errorf("turn-end left active-turn.json")
	}
}

func TestServeSubManualQuit(t *testing.T) {
	ch := newChannel(t, privateRoot(t), "main-1")
	b := startSubServe(t, ch)
	b.send(request{Op: "session", SessionID: "s-1", File: "/sessions/s-1.jsonl"})
	b.send(request{Op: "quit"})
	b.in.Close()
	if err := <-b.done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	b.done <- nil // for the cleanup, which waits for Serve again
	if c, ok, _ := ch.Closed(); !ok || c.Reason != "The Sub session was closed manually." {
		t.Errorf("closed.json = %+v %v", c, ok)
	}
	if s, ok, _ := ch.Session(); !ok || s.SessionID != "s-1" || s.SessionFile != "/sessions/s-1.jsonl" {
		t.Errorf("session.json = %+v %v", s, ok)
	}
}

func TestServeSubBadToken(t *testing.T) {
	ch := newChannel(t, privateRoot(t), "main-1")
	err := Serve(context.Background(), eofReader{}, io.Discard, ServeOptions{Role: "sub", ChannelDir: ch.Dir(), Token: "00"})
	if err == nil {
		t.Fatal("Serve accepted a wrong token")
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func TestServeMain(t *testing.T) {
	root := privateRoot(t)
	ch := newChannel(t, root, "main/1") // the session id is made path-safe
	m := mustSend(t, ch, channel.ToMain, "result")
	newChannel(t, root, "other-main") // another Main's run is never read
	b := startServe(t, ServeOptions{Role: "main", Root: root, MainSession: "main/1", Discover: 50 * time.Millisecond})
	b.send(request{Op: "ready"})
	d := b.next("delivery")
	want := channel.FormatDeliveryHeader(m.Receipt()) + "[Facets Sub message]\nSub 'T' (" + m.RunID + ") says:\nresult\n\n" +
		"Use talk with runId '" + m.RunID + "' to respond, or close_sub when the delivery is accepted and no more work is needed."
	if d.Text != want {
		t.Errorf("delivery = %q, want %q", d.Text, want)
	}
	// Pi settled without recording it (a withdrawn follow-up): the
	// extension releases it and it is offered again.
	b.send(request{Op: "release", Text: d.Text})
	b.send(request{Op: "settled"})
	if again := b.next("delivery"); again.Text != want {
		t.Errorf("redelivery = %q", again.Text)
	}
	b.send(request{Op: "receipt", Text: "[Facets delivery v1] not json\n\nx"}) // ignored
	b.send(request{Op: "receipt", Text: d.Text})
	waitEmpty(t, ch, channel.ToMain)

	// A run created later is found; a closed run's final message says so.
	late := newChannel(t, root, "main/1")
	if err := late.MarkClosed("bye"); err != nil {
		t.Fatal(err)
	}
	m2 := mustSend(t, late, channel.ToMain, "final")
	d2 := b.next("delivery")
	if want := channel.FormatDeliveryHeader(m2.Receipt()) + "[Facets Sub message]\nSub 'T' (" + m2.RunID + ") says:\nfinal\n\nThis Sub has already closed; this is a retained final delivery."; d2.Text != want {
		t.Errorf("closed delivery = %q, want %q", d2.Text, want)
	}
	// A removed channel is dropped without problems.
	if err := os.RemoveAll(late.Dir()); err != nil {
		t.Fatal(err)
	}
	b.quiet()
}

// TestServeSessionReceipts: receipts the session already holds (sent before
// ready, as the extension does at startup) suppress redelivery and remove
// the inbox file, so a restarted Pi never sees a message twice.
func TestServeSessionReceipts(t *testing.T) {
	ch := newChannel(t, privateRoot(t), "main-1")
	old := mustSend(t, ch, channel.ToSub, "already seen")
	fresh := mustSend(t, ch, channel.ToSub, "new")
	b := startSubServe(t, ch)
	b.send(request{Op: "receipt", Text: channel.FormatDeliveryHeader(old.Receipt()) + "anything"})
	b.send(request{Op: "ready"})
	d := b.next("delivery")
	if r, _, _ := channel.ParseDeliveryHeader(d.Text); r.MessageID != fresh.ID {
		t.Fatalf("delivered %s, want only the unreceipted %s", r.MessageID, fresh.ID)
	}
	b.quiet()
	if msgs, _, _ := ch.Pending(channel.ToSub); len(msgs) != 1 || msgs[0].ID != fresh.ID {
		t.Errorf("inbox = %+v, want only the in-flight message", msgs)
	}
}

// TestServeSettledReleasesNothing: a settle says nothing of a delivery
// offered after the extension sent it (it is still on its way to Pi), so
// the delivery is not offered a second time.
func TestServeSettledReleasesNothing(t *testing.T) {
	ch := newChannel(t, privateRoot(t), "main-1")
	mustSend(t, ch, channel.ToSub, "on its way")
	b := startSubServe(t, ch)
	b.send(request{Op: "ready"})
	b.next("delivery")
	b.send(request{Op: "settled"})
	b.quiet()
}

// TestServeInflightAfterReload: a delivery a previous bridge handed to Pi
// (still in Pi's queue across /reload) is not offered again, but a settle
// without its receipt makes it retryable.
func TestServeInflightAfterReload(t *testing.T) {
	ch := newChannel(t, privateRoot(t), "main-1")
	m := mustSend(t, ch, channel.ToSub, "queued before reload")
	b := startSubServe(t, ch)
	text := channel.FormatDeliveryHeader(m.Receipt()) + "[Facets Main message]\nMain says:\nqueued before reload"
	b.send(request{Op: "inflight", Text: text})
	b.send(request{Op: "ready"})
	b.quiet()
	b.send(request{Op: "release", Text: text})
	b.send(request{Op: "settled"})
	if d := b.next("delivery"); d.Text != text {
		t.Errorf("redelivery = %q", d.Text)
	}
}

func TestServeMainManualRun(t *testing.T) {
	root := privateRoot(t)
	ch, err := channel.Create(root, channel.Manifest{MainSessionID: "m", Title: "review", Task: "t", Cwd: "/", Origin: "manual",
		Profile: json.RawMessage(`{"version":1,"name":"review","description":"MR review","tools":["read"],"source":"global","sourcePath":"/p","resolvedSkills":[],"resolvedExtensions":[]}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	m := mustSend(t, ch, channel.ToMain, "found 2 bugs")
	b := startServe(t, ServeOptions{Role: "main", Root: root, MainSession: "m", Discover: 50 * time.Millisecond})
	b.send(request{Op: "ready"})
	want := channel.FormatDeliveryHeader(m.Receipt()) + "[Facets Sub message]\n[User-invoked specialist: review]\nPurpose: MR review\n" +
		manifest.ManualMainGuidance + "\nSub 'review' (" + m.RunID + ") says:\nfound 2 bugs\n\n" +
		"Use talk with runId '" + m.RunID + "' to respond, or close_sub when the delivery is accepted and no more work is needed."
	if d := b.next("delivery"); d.Text != want {
		t.Errorf("delivery = %q, want %q", d.Text, want)
	}
}

// TestServeSubChannelRemoved: the runtime removes a closed run's channel as
// soon as nothing is pending, possibly before the Sub's bridge has read
// close.json. The Sub takes the removal as its close, and neither side
// reports the removal as a watch failure.
func TestServeSubChannelRemoved(t *testing.T) {
	for _, withRequest := range []bool{false, true} {
		ch := newChannel(t, privateRoot(t), "main-1")
		b := startSubServe(t, ch)
		b.send(request{Op: "ready"})
		b.quiet()
		if withRequest {
			if err := ch.RequestClose("bye"); err != nil {
				t.Fatal(err)
			}
		}
		if err := ch.MarkClosed("bye"); err != nil {
			t.Fatal(err)
		}
		if err := ch.Remove(); err != nil {
			t.Fatal(err)
		}
		b.send(request{Op: "scan"})
		b.next("close") // fails on any problem event on the way
		b.quiet()
	}
}

// TestServeScanRacingRemoval: a scan may list an inbox while the runtime
// removes the closed run's channel (the inbox goes first, the channel
// directory after it); the resulting "no such file or directory" or
// ErrRemoved is the end of the run, not a channel error. Other failures
// are still reported.
func TestServeScanRacingRemoval(t *testing.T) {
	var out bytes.Buffer
	s := &server{out: json.NewEncoder(&out), reported: map[string]bool{}}
	dir := t.TempDir() // the channel directory still exists: only its inbox is gone
	s.receiverProblem(channel.Problem{Path: dir, Err: fmt.Errorf("list %s/to-main: %w", dir, fs.ErrNotExist)})
	s.receiverProblem(channel.Problem{Path: dir, Err: fmt.Errorf("list %s/to-main: %w", dir, channel.ErrRemoved)})
	if out.Len() != 0 {
		t.Errorf("a removed channel was reported: %s", out.String())
	}
	s.receiverProblem(channel.Problem{Path: dir, Err: fmt.Errorf("list %s/to-main: %w", dir, fs.ErrPermission)})
	if !strings.Contains(out.String(), `"type":"problem"`) {
		t.Errorf("another failure was not reported: %q", out.String())
	}
}

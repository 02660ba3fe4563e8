package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCreateWritesReferenceLayout(t *testing.T) {
	c := newTestChannel(t)
	m := c.Manifest()
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(m.Token) {
		t.Fatalf("token %q is not 64 lowercase hex characters", m.Token)
	}
	for name, want := range map[string]os.FileMode{".": 0o700, "to-main": 0o700, "to-sub": 0o700, "manifest.json": 0o600} {
		st, err := os.Lstat(filepath.Join(c.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, st.Mode().Perm(), want)
		}
	}
	data, err := os.ReadFile(filepath.Join(c.Dir(), "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	want := []string{"version", "runId", "mainSessionId", "title", "task", "cwd", "profile", "token", "createdAt"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("manifest key order (-want +got):\n%s", diff)
	}
	if !bytes.Contains(data, []byte(`"task": "review <the> flow & report"`)) || !bytes.HasSuffix(data, []byte("}\n")) {
		t.Errorf("manifest not serialized like JSON.stringify(v, null, 2)+newline:\n%s", data)
	}
	if got := filepath.Base(filepath.Dir(c.Dir())); got != "main-session" {
		t.Errorf("session dir %q", got)
	}
}

func TestCreateRefusesExistingRun(t *testing.T) {
	c := newTestChannel(t)
	root := filepath.Dir(filepath.Dir(c.Dir()))
	_, err := Create(root, testManifest(c.Manifest().RunID))
	if !errors.Is(err, os.ErrExist) {
		t.Fatalf("Create with a used run id: %v, want ErrExist", err)
	}
	if _, err := Open(c.Dir(), c.Manifest().Token); err != nil {
		t.Fatalf("original token no longer opens the channel: %v", err)
	}
}

func TestOpenRejectsWrongToken(t *testing.T) {
	c := newTestChannel(t)
	for _, tok := range []string{"", strings.Repeat("0", 64), c.Manifest().Token[:63]} {
		if o, err := Open(c.Dir(), tok); err == nil {
			o.Close()
			t.Errorf("Open with token %q succeeded", tok)
		}
	}
}

func TestSendOrderSurvivesClockRollbackAndRestart(t *testing.T) {
	c := newTestChannel(t)
	clock := time.UnixMilli(5_000_000)
	c.now = func() time.Time { clock = clock.Add(-time.Second); return clock }
	var want []string
	for i := range 5 {
		txt := strings.Repeat("x", i) + "msg"
		if _, err := c.Send(ToSub, txt); err != nil {
			t.Fatal(err)
		}
		want = append(want, txt)
	}
	// A new writer process continues the persisted counter.
	o := reopen(t, c)
	o.now = func() time.Time { return time.UnixMilli(0) }
	m := mustSend(t, o, ToSub, "after restart")
	if m.Sequence <= 5 {
		t.Errorf("sequence after restart = %d, want above 5", m.Sequence)
	}
	want = append(want, "after restart")
	got, problems, err := o.Pending(ToSub)
	if err != nil || len(problems) != 0 {
		t.Fatalf("Pending: %v %v", err, problems)
	}
	if diff := cmp.Diff(want, texts(got)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	// The other direction counts independently.
	if m, err := o.Send(ToMain, "up"); err != nil || m.Sequence != 1 {
		t.Errorf("first to-main send: seq %d err %v", m.Sequence, err)
	}
}

func TestSendWireFormat(t *testing.T) {
	c := newTestChannel(t)
	m := mustSend(t, c, ToMain, "hello <b>")
	data, err := os.ReadFile(filepath.Join(c.Dir(), "to-main", m.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"version\": 1,\n  \"id\": \"" + m.ID + "\",\n  \"sequence\": 1,\n  \"runId\": \"" + c.Manifest().RunID +
		"\",\n  \"token\": \"" + c.Manifest().Token + "\",\n  \"createdAt\": " + strconv.FormatInt(m.CreatedAt, 10) + ",\n  \"message\": \"hello <b>\"\n}\n"
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	seq, err := os.ReadFile(filepath.Join(c.Dir(), "to-main-sequence.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The counter reserves a block beyond the message just sent.
	wantSeq := "{\n  \"runId\": \"" + c.Manifest().RunID + "\",\n  \"token\": \"" + c.Manifest().Token + "\",\n  \"sequence\": " + strconv.Itoa(1+defaultReserve) + "\n}\n"
	if diff := cmp.Diff(wantSeq, string(seq)); diff != "" {
		t.Errorf("counter (-want +got):\n%s", diff)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(m.ID) {
		t.Errorf("id %q is not a UUID v4", m.ID)
	}
}

// TestSequenceLeaseAcrossWriters alternates two writer handles (as after a
// writer restart) with a tiny reservation and checks that order holds and
// the counter is written only when a writer's reservation is used up or was
// overtaken by the other writer.
func TestSequenceLeaseAcrossWriters(t *testing.T) {
	a := newTestChannel(t)
	b := reopen(t, a)
	counterWrites := 0
	count := func(op, name string) error {
		if op == "rename" && name == "to-main-sequence.json" {
			counterWrites++
		}
		return nil
	}
	for _, c := range []*Channel{a, b} {
		c.reserve = 3
		c.fault = count
	}
	var want []string
	send := func(c *Channel, s string) {
		t.Helper()
		if _, err := c.Send(ToMain, s); err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	for i := range 8 {
		send(a, "a"+strconv.Itoa(i))
	}
	if counterWrites != 2 { // 1..4 reserved, then 5..8 reserved... (1+3, then 5+3)
		t.Errorf("%d counter writes for 8 sends with reserve 3, want 2", counterWrites)
	}
	send(b, "b0")
	send(a, "a8") // b moved the counter: a must not reuse its old block
	send(b, "b1")
	got, _, err := a.Pending(ToMain)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, texts(got)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Sequence <= got[i-1].Sequence {
			t.Errorf("sequence %d after %d", got[i].Sequence, got[i-1].Sequence)
		}
	}
}

func TestCorruptCounterStopsSend(t *testing.T) {
	c := newTestChannel(t)
	for _, body := range []string{"not json", `{"runId":"other","token":"x","sequence":3}`, `{"runId":"` + c.Manifest().RunID + `","token":"` + c.Manifest().Token + `","sequence":0}`} {
		if err := os.WriteFile(filepath.Join(c.Dir(), "to-sub-sequence.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Send(ToSub, "x"); err == nil || !strings.Contains(err.Error(), "invalid talk sequence counter") {
			t.Errorf("counter %q: err %v", body, err)
		}
	}
	if n := inboxNames(t, c, ToSub); len(n) != 0 {
		t.Errorf("inbox not empty after refused sends: %v", n)
	}
}

func TestRemovedChannelIsNotRecreated(t *testing.T) {
	c := newTestChannel(t)
	if err := os.RemoveAll(c.Dir()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ToSub, "late"); err == nil {
		t.Fatal("send into a removed channel succeeded")
	}
	if err := c.MarkClosed("late"); err == nil {
		t.Fatal("control write into a removed channel succeeded")
	}
	if _, err := os.Lstat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("channel dir came back: %v", err)
	}
}

func TestOversizeMessageRefusedBeforeWriting(t *testing.T) {
	c := newTestChannel(t)
	if _, err := c.Send(ToSub, strings.Repeat("a", MaxMessageBytes)); err == nil {
		t.Fatal("1 MiB message accepted")
	}
	if _, err := os.Lstat(filepath.Join(c.Dir(), "to-sub-sequence.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("counter written for a refused message: %v", err)
	}
	if n := inboxNames(t, c, ToSub); len(n) != 0 {
		t.Errorf("inbox not empty: %v", n)
	}
	// Just under the limit still goes through.
	overhead := 300 + len(c.Manifest().Token)
	if _, err := c.Send(ToSub, strings.Repeat("a", MaxMessageBytes-overhead)); err != nil {
		t.Errorf("message under the limit refused: %v", err)
	}
}

func TestReaderRefusesOversizedAndForgedFiles(t *testing.T) {
	c := newTestChannel(t)
	ok := mustSend(t, c, ToSub, "genuine")
	inbox := filepath.Join(c.Dir(), "to-sub")
	big := filepath.Join(inbox, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), MaxMessageBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	forged := NewID()
	body := `{"version":1,"id":"` + forged + `","sequence":1,"runId":"` + c.Manifest().RunID + `","token":"` + strings.Repeat("f", 64) + `","createdAt":1,"message":"evil"}`
	if err := os.WriteFile(filepath.Join(inbox, forged+".json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	otherRun := NewID()
	body = `{"version":1,"id":"` + otherRun + `","sequence":1,"runId":"other","token":"` + c.Manifest().Token + `","createdAt":1,"message":"evil"}`
	if err := os.WriteFile(filepath.Join(inbox, otherRun+".json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(inbox, "x.json.123.abc.tmp"), []byte("garbage"), 0o600)
	msgs, problems, err := c.Pending(ToSub)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].ID != ok.ID {
		t.Errorf("delivered %v, want only the genuine message", texts(msgs))
	}
	var why []string
	for _, p := range problems {
		why = append(why, p.Error())
	}
	joined := strings.Join(why, "\n")
	for _, want := range []string{"exceeds the 1048576 byte limit", "capability token does not match", `runId "other" does not match`} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems lack %q:\n%s", want, joined)
		}
	}
	if len(problems) != 3 {
		t.Errorf("%d problems, want 3 (temp file must be ignored):\n%s", len(problems), joined)
	}
	if n := inboxNames(t, c, ToSub); len(n) != 5 {
		t.Errorf("rejected files were removed: %v", n)
	}
}

func TestControlFiles(t *testing.T) {
	c := newTestChannel(t)
	if _, ok, err := c.Session(); ok || err != nil {
		t.Fatalf("absent session: ok=%v err=%v", ok, err)
	}
	if err := c.WriteSession("sess-1", "/s/1.jsonl"); err != nil {
		t.Fatal(err)
	}
	s, ok, err := c.Session()
	if !ok || err != nil || s.SessionID != "sess-1" || s.SessionFile != "/s/1.jsonl" {
		t.Fatalf("session %+v ok=%v err=%v", s, ok, err)
	}
	if err := c.SetActiveTurn("turn-2"); err != nil {
		t.Fatal(err)
	}
	if err := c.ClearActiveTurn("turn-1"); err != nil {
		t.Fatal(err)
	}
	if tr, ok, _ := c.ActiveTurn(); !ok || tr.TurnID != "turn-2" {
		t.Fatalf("stale clear erased the newer turn: %+v %v", tr, ok)
	}
	if err := c.RequestInterrupt(Turn{TurnID: "turn-2", CreatedAt: 7}); err != nil {
		t.Fatal(err)
	}
	if it, ok, err := c.Interrupt(); !ok || err != nil || it.TurnID != "turn-2" || it.RequestedAt == 0 {
		t.Fatalf("interrupt %+v %v %v", it, ok, err)
	}
	if err := c.ConsumeInterrupt(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Interrupt(); ok {
		t.Fatal("interrupt not consumed")
	}
	if err := c.ClearActiveTurn("turn-2"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.ActiveTurn(); ok {
		t.Fatal("active turn not cleared")
	}
	if err := c.RequestClose("done"); err != nil {
		t.Fatal(err)
	}
	if cl, ok, err := c.CloseRequest(); !ok || err != nil || cl.Reason != "done" {
		t.Fatalf("close %+v %v %v", cl, ok, err)
	}
	// Another run's control file is not taken as this run's.
	os.WriteFile(filepath.Join(c.Dir(), "closed.json"), []byte(`{"version":1,"runId":"x","token":"y","createdAt":1,"reason":"r"}`), 0o600)
	if _, ok, err := c.Closed(); ok || err == nil {
		t.Fatalf("foreign closed.json accepted: ok=%v err=%v", ok, err)
	}
}

func TestRemoveRetainsQueuedSubToMainMessages(t *testing.T) {
	c := newTestChannel(t)
	m := mustSend(t, c, ToMain, "final report")
	if _, err := c.Send(ToSub, "never read"); err != nil {
		t.Fatal(err)
	}
	if err := c.MarkClosed("quit"); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(); !errors.Is(err, ErrRetained) {
		t.Fatalf("Remove with a queued to-main message: %v, want ErrRetained", err)
	}
	if _, ok, err := c.Closed(); !ok || err != nil {
		t.Fatalf("closed state lost: %v %v", ok, err)
	}
	if err := c.Acknowledge(m); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(); err != nil {
		t.Fatalf("Remove after the Main received everything: %v", err)
	}
	if _, err := os.Lstat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("channel still there: %v", err)
	}
}

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"abc-DEF_1.2": "abc-DEF_1.2", "a b//c": "a-b-c", "--x--": "x", "": "unknown", "日本": "unknown",
		"..": "unknown", "a日本b": "a-b", strings.Repeat("z", 100): strings.Repeat("z", 96),
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenRejectsInvalidManifest(t *testing.T) {
	for name, edit := range map[string]func(map[string]any){
		"version 2":         func(m map[string]any) { m["version"] = 2 },
		"origin auto":       func(m map[string]any) { m["origin"] = "auto" },
		"title number":      func(m map[string]any) { m["title"] = 3 },
		"no createdAt":      func(m map[string]any) { delete(m, "createdAt") },
		"profile tools []":  func(m map[string]any) { m["profile"].(map[string]any)["tools"] = []any{} },
		"profile tool null": func(m map[string]any) { m["profile"].(map[string]any)["tools"] = []any{"read", nil} },
		"profile source":    func(m map[string]any) { m["profile"].(map[string]any)["source"] = "remote" },
		"skills not array":  func(m map[string]any) { m["profile"].(map[string]any)["resolvedSkills"] = "x" },
	} {
		c := newTestChannel(t)
		path := filepath.Join(c.Dir(), "manifest.json")
		data, _ := os.ReadFile(path)
		var m map[string]any
		json.Unmarshal(data, &m)
		edit(m)
		data, _ = json.Marshal(m)
		os.WriteFile(path, data, 0o600)
		if o, err := Open(c.Dir(), c.Manifest().Token); err == nil || !strings.Contains(err.Error(), "invalid channel manifest") {
			if o != nil {
				o.Close()
			}
			t.Errorf("%s: Open err %v", name, err)
		}
	}
	// A tool whose name merely contains "null" is fine.
	c := newTestChannel(t)
	path := filepath.Join(c.Dir(), "manifest.json")
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(`"grep"`), []byte(`"nullable"`), 1), 0o600)
	if o, err := Open(c.Dir(), c.Manifest().Token); err != nil {
		t.Errorf("tool named nullable: %v", err)
	} else {
		o.Close()
	}
}

// TestCreateLayout: Create puts a run's channel at
// <root>/<Safe(main session)>/<Safe(run id)>, the layout the TypeScript
// Facets shares.
func TestCreateLayout(t *testing.T) {
	root := filepath.Join(t.TempDir(), "rt")
	c, err := Create(root, Manifest{MainSessionID: "main session!", RunID: "run/1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if want := filepath.Join(root, "main-session", "run-1"); c.Dir() != want {
		t.Errorf("Dir = %q, want %q", c.Dir(), want)
	}
}

// A removed channel's descriptors still list an empty inbox; Pending says
// the channel is gone instead.
func TestPendingOfRemovedChannel(t *testing.T) {
	c := newTestChannel(t)
	mustSend(t, c, ToMain, "kept until the removal")
	if msgs, _, err := c.Pending(ToMain); err != nil || len(msgs) != 1 {
		t.Fatalf("Pending before the removal: %v, %v", msgs, err)
	}
	if err := os.RemoveAll(c.Dir()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Pending(ToMain); !errors.Is(err, ErrRemoved) {
		t.Fatalf("Pending of a removed channel: %v, want ErrRemoved", err)
	}
}

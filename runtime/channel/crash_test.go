package channel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary re-execute itself as a crash-test child.
func TestMain(m *testing.M) {
	switch os.Getenv("FACETS_CRASH_CHILD") {
	case "send":
		os.Exit(crashSender())
	case "recv":
		os.Exit(crashReceiver())
	}
	os.Exit(m.Run())
}

// sessionLog stands in for a persisted receiving Pi session: every
// submission appends one fsynced line, and a receipt is simply the presence
// of that line. Unlike FileReceipts it never dedupes, so a double delivery
// shows up as two lines.
type sessionLog struct {
	mu   sync.Mutex
	f    *os.File
	size int64
	seen map[Receipt]bool
}

type sessionEntry struct {
	Receipt
	Sequence int64 `json:"sequence"`
}

func openSessionLog(path string) (*sessionLog, []sessionEntry, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, err
	}
	s := &sessionLog{f: f, seen: map[Receipt]bool{}}
	var entries []sessionEntry
	for {
		i := bytes.IndexByte(data[s.size:], '\n')
		if i < 0 {
			break
		}
		var e sessionEntry
		if err := json.Unmarshal(data[s.size:s.size+int64(i)], &e); err != nil {
			return nil, nil, fmt.Errorf("corrupt session line at %d: %w", s.size, err)
		}
		entries = append(entries, e)
		s.seen[e.Receipt] = true
		s.size += int64(i) + 1
	}
	// A torn last line means that submission never completed.
	if err := f.Truncate(s.size); err != nil {
		return nil, nil, err
	}
	_, err = f.Seek(s.size, io.SeekStart)
	return s, entries, err
}

func (s *sessionLog) Has(r Receipt) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[r], nil
}

func (s *sessionLog) Record(r Receipt) error { return s.append(sessionEntry{Receipt: r}) }

func (s *sessionLog) append(e sessionEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	if _, err := s.f.Write(line); err != nil {
		return err
	}
	if err := s.f.Sync(); err != nil {
		return err
	}
	s.size += int64(len(line))
	s.seen[e.Receipt] = true
	return nil
}

func crashSender() int {
	c, err := Open(os.Getenv("FACETS_CRASH_DIR"), os.Getenv("FACETS_CRASH_TOKEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	os.Stdout.WriteString("ready\n")
	for i := 0; ; i++ {
		m, err := c.Send(ToMain, "crash message "+strconv.Itoa(i))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		// One short write per line: atomic on a pipe, so the parent sees
		// whole lines only.
		os.Stdout.WriteString("sent " + m.ID + " " + strconv.FormatInt(m.Sequence, 10) + "\n")
	}
}

// markedLog is a sessionLog whose delivered marks persist in a receipt
// log of their own, so a killed receiver's successor refuses replays.
type markedLog struct {
	*sessionLog
	marks *FileReceipts
}

func (s markedLog) Delivered(r Receipt) (int64, bool, error) { return s.marks.Delivered(r) }

func (s markedLog) RecordDelivered(d Direction, runID string, seq int64, waiting []string) error {
	return s.marks.RecordDelivered(d, runID, seq, waiting)
}

func crashReceiver() int {
	c, err := Open(os.Getenv("FACETS_CRASH_DIR"), os.Getenv("FACETS_CRASH_TOKEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	log, _, err := openSessionLog(os.Getenv("FACETS_CRASH_LOG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	marks, err := OpenFileReceipts(os.Getenv("FACETS_CRASH_MARKS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	submit := func(d Delivery) error {
		return log.append(sessionEntry{Receipt: d.Message.Receipt(), Sequence: d.Message.Sequence})
	}
	rx := NewReceiver(ToMain, markedLog{log, marks}, submit, func(p Problem) { fmt.Fprintln(os.Stderr, p.Err) })
	os.Stdout.WriteString("ready\n")
	for {
		rx.Scan(c)
		time.Sleep(200 * time.Microsecond)
	}
}

// TestCrashAtRandomPoints SIGKILLs a sending and a receiving process at
// random points, 200 times, then checks that every message whose Send
// returned is delivered exactly once to the receiving session, in
// sequence order, and that nothing else is delivered twice.
func TestCrashAtRandomPoints(t *testing.T) {
	const iterations = 200
	c := newTestChannel(t)
	logPath := filepath.Join(t.TempDir(), "session.jsonl")
	marksPath := filepath.Join(t.TempDir(), "marks.jsonl")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))
	env := slices.Clip(append(os.Environ(), "FACETS_CRASH_DIR="+c.Dir(), "FACETS_CRASH_TOKEN="+c.Manifest().Token, "FACETS_CRASH_LOG="+logPath, "FACETS_CRASH_MARKS="+marksPath))
	acked := map[string]int64{}
	var childErrs []string
	for i := range iterations {
		var sendErr, recvErr bytes.Buffer
		sender := exec.Command(os.Args[0], "-test.run=^$")
		sender.Env = append(env, "FACETS_CRASH_CHILD=send")
		sender.Stderr = &sendErr
		receiver := exec.Command(os.Args[0], "-test.run=^$")
		receiver.Env = append(env, "FACETS_CRASH_CHILD=recv")
		receiver.Stderr = &recvErr
		sendOut, err := sender.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		recvOut, err := receiver.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := sender.Start(); err != nil {
			t.Fatal(err)
		}
		if err := receiver.Start(); err != nil {
			t.Fatal(err)
		}
		// Start the kill clocks once both children are running, so the
		// random points fall inside sends and scans, not process start-up.
		sent := bufio.NewScanner(sendOut)
		recvReady := bufio.NewScanner(recvOut)
		if !sent.Scan() || !recvReady.Scan() {
			t.Fatalf("iteration %d: child did not start: %s %s", i, sendErr.String(), recvErr.String())
		}
		lines := make(chan []string, 1)
		go func() {
			var ls []string
			for sent.Scan() {
				ls = append(ls, sent.Text())
			}
			lines <- ls
		}()
		go io.Copy(io.Discard, recvOut)
		procs := []*exec.Cmd{sender, receiver}
		if rng.IntN(2) == 0 {
			procs[0], procs[1] = procs[1], procs[0]
		}
		for _, p := range procs {
			time.Sleep(time.Duration(rng.IntN(20_000)) * time.Microsecond)
			p.Process.Signal(syscall.SIGKILL)
		}
		for _, line := range <-lines {
			f := strings.Fields(line)
			seq, _ := strconv.ParseInt(f[2], 10, 64)
			acked[f[1]] = seq
		}
		for _, p := range procs {
			p.Wait()
		}
		for _, b := range []*bytes.Buffer{&sendErr, &recvErr} {
			if b.Len() > 0 {
				childErrs = append(childErrs, fmt.Sprintf("iteration %d: %s", i, b.String()))
			}
		}
	}
	for _, e := range childErrs {
		t.Error(e)
	}
	// Restart the receiving session one last time and drain.
	log, _, err := openSessionLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	marks, err := OpenFileReceipts(marksPath)
	if err != nil {
		t.Fatal(err)
	}
	defer marks.Close()
	rx := NewReceiver(ToMain, markedLog{log, marks}, func(d Delivery) error {
		return log.append(sessionEntry{Receipt: d.Message.Receipt(), Sequence: d.Message.Sequence})
	}, func(p Problem) { t.Errorf("problem: %v", p.Err) })
	rx.Scan(c)
	log.f.Close()
	_, entries, err := openSessionLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var last int64
	unacked := 0
	for _, e := range entries {
		count[e.MessageID]++
		if _, ok := acked[e.MessageID]; !ok {
			unacked++ // killed after publishing, before Send returned
		}
		if e.Sequence <= last {
			t.Errorf("sequence %d delivered after %d", e.Sequence, last)
		}
		last = e.Sequence
	}
	for id, n := range count {
		if n != 1 {
			t.Errorf("message %s delivered %d times", id, n)
		}
	}
	for id, seq := range acked {
		if count[id] == 0 {
			t.Errorf("acknowledged message %s (sequence %d) lost", id, seq)
		}
	}
	if left, _, _ := c.Pending(ToMain); len(left) != 0 {
		t.Errorf("%d messages still queued after the final drain", len(left))
	}
	if len(acked) == 0 {
		t.Fatal("no send ever completed; the test exercised nothing")
	}
	// The marks survived the kills: a new file replaying the last delivered
	// sequence is refused by yet another receiver.
	forged := forgeReplay(t, c, ToMain, last)
	var refused []Problem
	NewReceiver(ToMain, markedLog{log, marks}, func(Delivery) error { return errors.New("replay submitted") },
		func(p Problem) { refused = append(refused, p) }).Scan(c)
	if len(refused) != 1 || refused[0].Path != forged+AsideSuffix {
		t.Errorf("replay of sequence %d: problems %v, want it refused", last, refused)
	}
	if err := os.Remove(forged + AsideSuffix); err != nil {
		t.Fatal(err)
	}
	temps := tempFiles(t, c, ToMain)
	t.Logf("%d iterations: %d sends confirmed, %d deliveries (%d published by a sender killed before Send returned), %d temp files left by killed writers",
		iterations, len(acked), len(entries), unacked, len(temps))
	// The next writer sweeps whatever temp files the killed ones left; one
	// of each kind is planted so the check never depends on the kill timing.
	for _, name := range []string{filepath.Join(string(ToMain), NewID()+".json"), sequenceFile(ToMain)} {
		if err := os.WriteFile(filepath.Join(c.Dir(), tempName(name, os.Getpid())), []byte("torn"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reopen(t, c).Send(ToMain, "after the crashes"); err != nil {
		t.Fatal(err)
	}
	if left := tempFiles(t, c, ToMain); len(left) != 0 {
		t.Errorf("temp files left by killed writers survived the next writer: %v", left)
	}
}

// A send that waits for the inbox lock while gc discards the channel is
// refused once it gets the lock: it never returns success for a message
// written into a directory being removed.
func TestSendRacingDiscardFailsLoudly(t *testing.T) {
	c := newTestChannel(t)
	parent := filepath.Dir(c.Dir())
	gc, err := OpenOwned(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := gc.LockInboxes()
	if err != nil {
		t.Fatal(err)
	}
	_ = unlock // Discard releases the locks by closing the inboxes
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(ToSub, "a question sent while gc releases the run")
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // the sender is waiting for the lock
	if err := gc.Discard(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrRemoved) {
		t.Fatalf("send racing a discard: %v; want ErrRemoved", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left in the channel root: %v", names)
	}
}

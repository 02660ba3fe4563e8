package pibridge_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facets-dev/facets/runtime/channel"
)

// TestDeliveriesOnceWithRealPi: Subs send bursts of messages to a real
// Main, 20 rounds, while it is idle and while it is busy with a user
// prompt. Every message reaches the Main's conversation exactly once, Pi
// never reports a competing run ("already processing"), and every request
// the Main sends carries its MAIN.md section.
func TestDeliveriesOnceWithRealPi(t *testing.T) {
	const rounds, burst = 20, 3
	mock := startMock(t, func(n int, req chatRequest) reply {
		if l := req.last(); l.Role == "user" && strings.Contains(l.text(), "BUSY_PROMPT") {
			time.Sleep(300 * time.Millisecond) // the Main stays busy while the burst arrives
		}
		return reply{Text: "noted"}
	})
	e := newPiEnv(t, mock)
	writeFile(t, filepath.Join(e.agentDir, "facets", "MAIN.md"), "MAIN_POLICY_MARK\n")
	const session = "facets-main-once"
	chA, _ := workerMessage(t, e, session, "A", "hello from A")
	chB, _ := workerMessage(t, e, session, "B", "hello from B")
	sent := []string{"hello from A", "hello from B"}

	pi := e.startRPC(nil, "--no-extensions", "-e", e.bridge, "--session-id", session)
	// waitDelivered waits until every sent message is out of both inboxes
	// (its receipt was recorded) and the Main is idle again.
	waitDelivered := func(what string) {
		t.Helper()
		pi.waitFor(what, 60*time.Second, func(evs []map[string]any) bool {
			for _, ch := range []*channel.Channel{chA, chB} {
				if msgs, _, err := ch.Pending(channel.ToMain); err != nil || len(msgs) > 0 {
					return false
				}
			}
			reqs := mock.Requests()
			if len(reqs) == 0 || !strings.Contains(conversation(reqs[len(reqs)-1]), sent[len(sent)-1]) {
				return false
			}
			// Idle: every run Pi started has ended.
			starts, ends := 0, 0
			for _, ev := range evs {
				switch ev["type"] {
				case "agent_start":
					starts++
				case "agent_end":
					ends++
				}
			}
			return starts == ends
		})
	}
	// sendBurst sends burst messages from both Subs at once.
	sendBurst := func(kind string, round int) {
		t.Helper()
		for i := range burst {
			ch := []*channel.Channel{chA, chB}[i%2]
			text := fmt.Sprintf("%s round %d message %d", kind, round, i)
			if _, err := ch.Send(channel.ToMain, text); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, text)
		}
		waitDelivered(fmt.Sprintf("round %d's %s burst", round, kind))
	}
	waitDelivered("the first two deliveries")
	for round := range rounds {
		sendBurst("idle", round)
		// Busy: a user prompt, then a burst while the model answers it.
		id := fmt.Sprintf("busy%d", round)
		pi.send(map[string]any{"id": id, "type": "prompt", "message": "BUSY_PROMPT " + id})
		if r := pi.response(id); r["success"] != true {
			t.Fatalf("prompt: %v", r)
		}
		time.Sleep(50 * time.Millisecond)
		sendBurst("busy", round)
	}
	// One last prompt: its request holds the whole conversation.
	pi.send(map[string]any{"id": "final", "type": "prompt", "message": "FINAL_PROMPT"})
	pi.waitFor("the final prompt's request", 30*time.Second, func([]map[string]any) bool {
		reqs := mock.Requests()
		return strings.Contains(reqs[len(reqs)-1].last().text(), "FINAL_PROMPT")
	})
	pi.stop()

	reqs := mock.Requests()
	hist := conversation(reqs[len(reqs)-1])
	for _, text := range sent {
		if n := strings.Count(hist, "says:\n"+text+"\n"); n != 1 {
			t.Errorf("message %q is in the Main's conversation %d times, want 1", text, n)
		}
	}
	for i, r := range reqs {
		if !strings.Contains(r.system(), "<facets_main>") || !strings.Contains(r.system(), "MAIN_POLICY_MARK") {
			t.Errorf("Main request %d of %d lacks the MAIN.md section", i+1, len(reqs))
		}
	}
	pi.mu.Lock()
	defer pi.mu.Unlock()
	for _, ev := range pi.events {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), "already processing") {
			t.Errorf("Pi reported a competing run: %s", b)
		}
	}
	if strings.Contains(pi.stderr.String(), "already processing") {
		t.Errorf("Pi reported a competing run:\n%s", pi.stderr)
	}
}

// conversation renders a request's non-system messages, one "role: text"
// line each.
func conversation(r chatRequest) string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			continue
		}
		b.WriteString(m.Role + ": " + m.text() + "\n")
	}
	return b.String()
}

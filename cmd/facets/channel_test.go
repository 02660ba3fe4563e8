package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/channel"
)

func newCLIChannel(t *testing.T) *channel.Channel {
	t.Helper()
	profile := `{"version":1,"name":"review","tools":["read"],"source":"global","sourcePath":"/p","resolvedSkills":[],"resolvedExtensions":[]}`
	c, err := channel.Create(filepath.Join(t.TempDir(), "rt"), channel.Manifest{MainSessionID: "main", Title: "t", Task: "x", Cwd: "/", Profile: json.RawMessage(profile)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// tokenFile writes a token to a private file, the way the runtime hands it
// to a Sub, so tests never pass a token on the command line.
func tokenFile(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCLI runs the CLI with an empty environment.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return runApp(t, nil, stdin, args...)
}

func TestChannelSendRecvRoundTrip(t *testing.T) {
	c := newCLIChannel(t)
	dir, tok := c.Dir(), tokenFile(t, c.Manifest().Token)
	code, out, stderr := runCLI(t, "", "channel", "send", "--dir", dir, "--token-file", tok, "--direction", "to-main", "--text", "first")
	if code != 0 || !strings.Contains(out, `"sequence":1`) {
		t.Fatalf("send: code %d out %q err %q", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "second\nline", "channel", "send", "--dir", dir, "--token-file", tok, "--direction", "to-main"); code != 0 {
		t.Fatalf("send from stdin: %d %s", code, stderr)
	}
	receipts := filepath.Join(t.TempDir(), "receipts.jsonl")
	code, out, stderr = runCLI(t, "", "channel", "recv", "--dir", dir, "--token-file", tok, "--direction", "to-main", "--receipts", receipts)
	if code != 0 {
		t.Fatalf("recv: %d %s", code, stderr)
	}
	var got []channel.DeliveryLine
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l channel.DeliveryLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, l)
	}
	if len(got) != 2 || got[0].Message != "first" || got[1].Message != "second\nline" || got[1].Sequence <= got[0].Sequence {
		t.Fatalf("deliveries %+v", got)
	}
	r, body, err := channel.ParseDeliveryHeader(got[0].Text)
	if err != nil || body != "first" || r.MessageID != got[0].MessageID {
		t.Fatalf("text %q does not carry its header: %v", got[0].Text, err)
	}
	if code, out, _ := runCLI(t, "", "channel", "recv", "--dir", dir, "--token-file", tok, "--direction", "to-main", "--receipts", receipts); code != 0 || out != "" {
		t.Fatalf("second recv delivered again: %d %q", code, out)
	}
}

func TestChannelUsageAndTokenErrors(t *testing.T) {
	c := newCLIChannel(t)
	if code, _, _ := runCLI(t, "", "channel", "send", "--dir", c.Dir(), "--token-file", tokenFile(t, c.Manifest().Token), "--direction", "up", "--text", "x"); code != 2 {
		t.Errorf("bad direction: exit %d, want 2", code)
	}
	if code, _, _ := runCLI(t, "", "channel", "send", "--token-file", tokenFile(t, "x"), "--direction", "to-sub", "--dir", ""); code != 2 {
		t.Errorf("missing dir: exit %d, want 2", code)
	}
	code, _, stderr := runCLI(t, "", "channel", "send", "--dir", c.Dir(), "--token-file", tokenFile(t, strings.Repeat("0", 64)), "--direction", "to-sub", "--text", "x")
	if code != exitFailure || !strings.Contains(stderr, "token does not match") {
		t.Errorf("wrong token: exit %d, %q", code, stderr)
	}
}

func TestChannelWatchAndInspect(t *testing.T) {
	c := newCLIChannel(t)
	dir, tok := c.Dir(), tokenFile(t, c.Manifest().Token)
	for _, s := range []string{"a", "b"} {
		if _, err := c.Send(channel.ToSub, s); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(dir, "to-sub", "corrupt.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "", "channel", "inspect", "--dir", dir)
	if code != 1 || !strings.Contains(out, "corrupt.json") || !strings.Contains(out, `"sequence": 2`) || strings.Contains(out, tok) {
		t.Fatalf("inspect: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "", "channel", "watch", "--dir", dir, "--token-file", tok, "--direction", "to-sub", "--count", "2", "--timeout", "30s")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(stderr, "corrupt.json") {
		t.Fatalf("watch: exit %d\n%s\n%s", code, out, stderr)
	}
	os.Remove(bad)
	code, out, _ = runCLI(t, "", "channel", "inspect", "--dir", dir)
	if code != 0 || !strings.Contains(out, `"to-sub": []`) {
		t.Fatalf("inspect after drain: exit %d\n%s", code, out)
	}
}

// TestChannelTokenNeverOnArgv pins that the token can only come from a file
// or the environment: a --token flag would put it in ps output.
func TestChannelTokenNeverOnArgv(t *testing.T) {
	t.Parallel()
	c := newCLIChannel(t)
	if code, _, stderr := runCLI(t, "", "channel", "send", "--dir", c.Dir(), "--token", c.Manifest().Token, "--direction", "to-main", "--text", "x"); code != exitUsage || !strings.Contains(stderr, "unknown flag: --token") {
		t.Errorf("--token accepted: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "", "channel", "send", "--dir", c.Dir(), "--direction", "to-main", "--text", "x"); code != exitUsage || !strings.Contains(stderr, "no token") {
		t.Errorf("missing token: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "", "channel", "send", "--dir", c.Dir(), "--token-file", filepath.Join(t.TempDir(), "absent"), "--direction", "to-main", "--text", "x"); code != exitFailure || !strings.Contains(stderr, "read token file") {
		t.Errorf("unreadable token file: exit %d, %q", code, stderr)
	}
	env := map[string]string{envvar.Token: c.Manifest().Token}
	if code, _, stderr := runApp(t, env, "", "channel", "send", "--dir", c.Dir(), "--direction", "to-main", "--text", "x"); code != exitOK {
		t.Errorf("token from environment: exit %d, %q", code, stderr)
	}
}

package channel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteFailuresKeepMessages injects ENOSPC and EACCES at every step of a
// send through the filesystem seam (tests run as root, for whom chmod cannot
// produce EACCES). Each failure must surface as a clear error, leave no
// partial message visible, and the retried send must arrive after the
// messages already queued.
func TestWriteFailuresKeepMessages(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EACCES} {
		for _, target := range []string{"to-sub-sequence.json", "payload"} {
			for _, op := range []string{"create", "write", "sync", "rename", "sync-dir"} {
				t.Run(fmt.Sprintf("%s/%s/%s", errno, target, op), func(t *testing.T) {
					c := newTestChannel(t)
					if _, err := c.Send(ToSub, "before"); err != nil {
						t.Fatal(err)
					}
					// A restarted writer has no reservation left in memory,
					// so its first send must write the counter.
					c = reopen(t, c)
					c.fault = func(o, name string) error {
						var hit bool
						switch {
						case o == "sync-dir" && target == "payload":
							hit = name == filepath.Join(c.Dir(), "to-sub")
						case o == "sync-dir":
							hit = name == c.Dir()
						case target == "payload":
							hit = name != "to-sub-sequence.json"
						default:
							hit = name == "to-sub-sequence.json"
						}
						if o == op && hit {
							return errno
						}
						return nil
					}
					sent, err := c.Send(ToSub, "the message")
					if err == nil {
						t.Fatal("send succeeded despite the injected failure")
					}
					if !errors.Is(err, errno) || !strings.Contains(err.Error(), "send to "+c.Dir()) {
						t.Fatalf("error %q does not say what failed (want %v)", err, errno)
					}
					c.fault = nil
					queued, _, _ := c.Pending(ToSub)
					published := len(queued) == 2
					// Only a failed directory fsync after the rename leaves the
					// message visible, and then Send says so by returning it.
					if published != (target == "payload" && op == "sync-dir") || published != (sent.ID != "") {
						t.Fatalf("published=%v after %s failure, Send returned %+v", published, op, sent)
					}
					if !published {
						if _, err := c.Send(ToSub, "the message"); err != nil {
							t.Fatalf("retry: %v", err)
						}
					}
					queued, problems, err := c.Pending(ToSub)
					if err != nil || len(problems) != 0 {
						t.Fatalf("pending: %v %v", err, problems)
					}
					if diff := cmp.Diff([]string{"before", "the message"}, texts(queued)); diff != "" {
						t.Errorf("queue (-want +got):\n%s", diff)
					}
					if left := tempFiles(t, c, ToSub); len(left) != 0 {
						t.Errorf("temp files left behind: %v", left)
					}
				})
			}
		}
	}
}

// TestReceiptFailureKeepsMessageQueued: a receiving session that cannot
// record its receipt (disk full) leaves the message in the inbox.
func TestReceiptFailureKeepsMessageQueued(t *testing.T) {
	c := newTestChannel(t)
	if _, err := c.Send(ToMain, "report"); err != nil {
		t.Fatal(err)
	}
	store := NewMemoryReceipts()
	failing := true
	var reports []error
	rx := NewReceiver(ToMain, store, func(d Delivery) error {
		if failing {
			return fmt.Errorf("record receipt: %w", syscall.ENOSPC)
		}
		return store.Record(d.Message.Receipt())
	}, func(p Problem) { reports = append(reports, p.Err) })
	rx.Scan(c)
	if len(reports) != 1 || !errors.Is(reports[0], syscall.ENOSPC) || len(inboxNames(t, c, ToMain)) != 1 {
		t.Fatalf("reports %v, inbox %v", reports, inboxNames(t, c, ToMain))
	}
	failing = false
	if res := rx.Scan(c); res.Acknowledged != 1 {
		t.Fatalf("retry: %+v", res)
	}
}

// TestFullAndReadOnlyFilesystem uses a real 64 KiB tmpfs: filled up, a send
// fails with ENOSPC; remounted read-only, with EROFS. Neither loses a queued
// message and both sends succeed once space or write access is back.
// Mounting needs CAP_SYS_ADMIN (CI runs as root); the seam test above covers
// the same paths everywhere else.
func TestFullAndReadOnlyFilesystem(t *testing.T) {
	mnt, c := tmpfsChannel(t)
	if _, err := c.Send(ToSub, "queued before"); err != nil {
		t.Fatal(err)
	}
	fillUp(t, mnt)
	_, err := c.Send(ToSub, strings.Repeat("x", 8192))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("send on a full filesystem: %v, want ENOSPC", err)
	}
	os.Remove(filepath.Join(mnt, "filler"))
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v %s", err, out)
	}
	_, err = c.Send(ToSub, "read-only")
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("send on a read-only filesystem: %v, want EROFS", err)
	}
	if out, err := exec.Command("mount", "-o", "remount,rw", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount rw: %v %s", err, out)
	}
	if _, err := c.Send(ToSub, "after recovery"); err != nil {
		t.Fatal(err)
	}
	queued, problems, err := c.Pending(ToSub)
	if err != nil || len(problems) != 0 {
		t.Fatal(err, problems)
	}
	if diff := cmp.Diff([]string{"queued before", "after recovery"}, texts(queued)); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}
}

package channel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// TestReadTokenRefusesUnsafeFiles: a token file must be a regular 0600
// file owned by the user, like the channel's own files; anything else is
// refused with the file's path, and a special file never blocks.
func TestReadTokenRefusesUnsafeFiles(t *testing.T) {
	type setup func(t testing.TB, path string)
	cases := map[string]setup{
		"mode 0644": func(t testing.TB, path string) { os.Chmod(path, 0o644) },
		"mode 0640": func(t testing.TB, path string) { os.Chmod(path, 0o640) },
		"symlink": func(t testing.TB, path string) {
			target := path + ".real"
			os.Rename(path, target)
			os.Symlink(target, path)
		},
	}
	if os.Getuid() == 0 {
		// Only root can give a file away; as root, check the owner rule too.
		cases["foreign owner"] = func(t testing.TB, path string) { os.Chown(path, 4242, 4242) }
	}
	for _, c := range safefiletest.Cases(MaxTokenFileBytes) {
		cases[c.Name] = c.Make
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(path, []byte("secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			mk(t, path)
			var got string
			var err error
			safefiletest.Within(t, func() { got, err = ReadToken(path, "held") })
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadToken = %q, %v; want an error naming %s", got, err, path)
			}
		})
	}
}

// TestOpenFileReceiptsRefusesHostileFiles: a receipt log replaced by a
// FIFO, /dev/zero or an oversized file is refused with its path.
func TestOpenFileReceiptsRefusesHostileFiles(t *testing.T) {
	for _, c := range safefiletest.Cases(MaxReceiptLogBytes) {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "receipts.jsonl")
			c.Make(t, path)
			var err error
			safefiletest.Within(t, func() {
				var s *FileReceipts
				if s, err = OpenFileReceipts(path); err == nil {
					s.Close()
				}
			})
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("OpenFileReceipts: %v, want an error naming %s", err, path)
			}
		})
	}
}

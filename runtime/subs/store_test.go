package subs

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestLockLeavesNoFiles checks that an unlocked lock leaves nothing in the
// state dir, and that removing the file on unlock keeps the lock exclusive
// for waiters that opened the old file.
func TestLockLeavesNoFiles(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				unlock, err := s.Lock("main-1", "slots")
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d times two holders were inside the lock", n)
	}
	locks, err := filepath.Glob(filepath.Join(s.mainDir("main-1"), "*.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 0 {
		t.Errorf("lock files left behind: %v", locks)
	}
	if _, err := os.Stat(s.mainDir("main-1")); err != nil {
		t.Errorf("main dir: %v", err)
	}
}

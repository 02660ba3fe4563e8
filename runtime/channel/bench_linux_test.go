//go:build linux

package channel

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkDeliveryFloor is the least any file channel's delivery can
// cost, measured as BenchmarkDeliveryLatency measures the channel (1,000
// msgs/s over 4 directories on the same filesystem, the same floor beside
// it): publishFloor into a directory that one goroutine watches with
// inotify for moved-in files, reading each file an event names (open,
// read, close, then unlink) with no listing, validation, ordering or
// receipt. p50-ms and p99-ms run from the start of publishFloor to the end
// of that read, publish-p50-ms is publishFloor into the watched directory,
// floor-p50-ms and floor-p99-ms are publishFloor into an unwatched one
// half a step later (BenchmarkDeliveryLatency's floor), and p50-ratio and
// p99-ratio the delivery over that floor: what a receiver that only wakes
// up and reads would score there.
func BenchmarkDeliveryFloor(b *testing.B) {
	const channels = 4
	const interval = 4 * time.Millisecond
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		b.Skipf("no inotify: %v", err)
	}
	ino := os.NewFile(uintptr(fd), "inotify")
	dirs := make([]*os.File, channels)
	byWd := map[int32]*os.File{}
	for i := range dirs {
		dirs[i] = floorDir(b)
		wd, err := unix.InotifyAddWatch(fd, dirs[i].Name(), unix.IN_MOVED_TO)
		if err != nil {
			b.Fatal(err)
		}
		byWd[int32(wd)] = dirs[i]
	}
	total := b.N
	var mu sync.Mutex
	started := make(map[string]time.Time, total) // by path
	var lat, pub, floor []time.Duration
	done := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, 64<<10)
		data := make([]byte, 4096)
		got := 0
		for {
			n, err := ino.Read(buf)
			if err != nil {
				return
			}
			for p := 0; p+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[p]))
				name := strings.TrimRight(string(buf[p+unix.SizeofInotifyEvent:p+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				p += unix.SizeofInotifyEvent + int(ev.Len)
				dir := byWd[ev.Wd]
				f, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					b.Error(err)
					continue
				}
				_, err = unix.Read(f, data)
				unix.Close(f)
				now := time.Now()
				if err != nil {
					b.Error(err)
				}
				mu.Lock()
				lat = append(lat, now.Sub(started[filepath.Join(dir.Name(), name)]))
				mu.Unlock()
				_ = unix.Unlinkat(int(dir.Fd()), name, 0)
				if got++; got == total {
					close(done)
				}
			}
		}
	}()
	payload := []byte(`{"version":1,"id":"0123456789abcdef0123456789abcdef","sequence":1,"message":"1764765000000000000"}`)
	quiet := make([]*os.File, channels)
	for i := range quiet {
		quiet[i] = floorDir(b)
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, dir := range dirs {
		n := total / channels
		if i < total%channels {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			publishFloorAt(b, quiet[i], n, time.Duration(2*i+1)*interval/(2*channels), interval, payload, func(d time.Duration) {
				mu.Lock()
				floor = append(floor, d)
				mu.Unlock()
			})
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * interval / channels)
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for k := range n {
				<-tick.C
				path := filepath.Join(dir.Name(), "floor-"+strconv.Itoa(k)+".json")
				start := time.Now()
				mu.Lock()
				started[path] = start
				mu.Unlock()
				if err := publishFloor(dir, k, payload); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(start)
				mu.Lock()
				pub = append(pub, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	b.StopTimer()
	ino.Close()
	<-readerDone
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(float64(total-len(lat)), "lost")
	if len(lat) == 0 || len(pub) == 0 || len(floor) == 0 {
		b.Fatal("nothing delivered")
	}
	slices.Sort(pub)
	b.ReportMetric(ms(pub[len(pub)/2]), "publish-p50-ms")
	reportAgainstFloor(b, lat, floor)
}

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
)

// benchChannel creates a channel under $FACETS_CHANNEL_BENCH_DIR when set
// (e.g. /dev/shm, since $XDG_RUNTIME_DIR is normally a tmpfs), else under
// the test temp dir, which here is a disk-backed ext4.
func benchChannel(b *testing.B) *Channel {
	base := os.Getenv("FACETS_CHANNEL_BENCH_DIR")
	if base == "" {
		return newTestChannel(b)
	}
	dir, err := os.MkdirTemp(base, "facets-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	c, err := Create(filepath.Join(dir, "root"), testManifest(NewID()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkDeliveryLatency measures send-to-callback latency through the
// watcher at 1,000 msgs/s spread over 4 channels (250 msgs/s each), counting
// lost and duplicated deliveries. One op is one message; run with a fixed
// count, e.g. -benchtime=3000x. Latency starts before Send, so it includes
// the sender's own fsyncs.
//
// The same run measures the floor: beside each channel a goroutine
// publishes the same number of messages at the same rate with
// publishFloor (temp write, fsync, rename, directory fsync) on the same
// filesystem, half an interval step after the channel's sends so the two
// never contend for one tick. floor-p50-ms and floor-p99-ms are its
// durations; p50-ratio and p99-ratio are the delivery latency over them.
func BenchmarkDeliveryLatency(b *testing.B) {
	const channels = 4
	const interval = 4 * time.Millisecond // per channel: 4 × 250/s = 1,000/s
	var chans []*Channel
	for range channels {
		chans = append(chans, benchChannel(b))
	}
	total := b.N
	store := NewMemoryReceipts()
	var mu sync.Mutex
	lat := make([]time.Duration, 0, total)
	seen := make(map[string]int, total)
	received := make(map[string]time.Time, total) // by text: when first delivered
	done := make(chan struct{})
	rx := NewReceiver(ToMain, store, func(d Delivery) error {
		now := time.Now()
		sent, _ := strconv.ParseInt(d.Message.Text, 10, 64)
		mu.Lock()
		seen[d.Message.ID]++
		if seen[d.Message.ID] == 1 {
			received[d.Message.Text] = now
			lat = append(lat, time.Duration(now.UnixNano()-sent))
			if len(lat) == total {
				close(done)
			}
		}
		mu.Unlock()
		return store.Record(d.Message.Receipt())
	}, nil)
	w := startWatcher(b, ToMain, rx, WatchOptions{}, chans...)
	var sendMu sync.Mutex
	var sendDur, floorDur []time.Duration
	sendEnd := make(map[string]time.Time, total) // by text: when Send returned
	floorDirs := make([]*os.File, channels)
	for i := range floorDirs {
		floorDirs[i] = floorDir(b)
	}
	payload := []byte(`{"version":1,"id":"0123456789abcdef0123456789abcdef","sequence":1,"message":"1764765000000000000"}`)
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, c := range chans {
		n := total / channels
		if i < total%channels {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			publishFloorAt(b, floorDirs[i], n, time.Duration(2*i+1)*interval/(2*channels), interval, payload, func(d time.Duration) {
				sendMu.Lock()
				floorDur = append(floorDur, d)
				sendMu.Unlock()
			})
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * interval / channels) // spread the channels evenly
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for range n {
				<-tick.C
				start := time.Now()
				text := strconv.FormatInt(start.UnixNano(), 10)
				if _, err := c.Send(ToMain, text); err != nil {
					b.Error(err)
					return
				}
				end := time.Now()
				sendMu.Lock()
				sendDur = append(sendDur, end.Sub(start))
				sendEnd[text] = end
				sendMu.Unlock()
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	b.StopTimer()
	w.Close() // no delivery after this: the counts below are final
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	b.ReportMetric(float64(total-len(lat)), "lost")
	b.ReportMetric(float64(dups), "dups")
	if len(lat) == 0 {
		b.Fatal("nothing delivered")
	}
	// after is the watcher's share: from Send returning to delivery, zero
	// when the message was delivered before its sender's last fsync ended.
	var after []time.Duration
	for text, end := range sendEnd {
		if r, ok := received[text]; ok {
			after = append(after, max(0, r.Sub(end)))
		}
	}
	slices.Sort(sendDur)
	slices.Sort(after)
	reportAgainstFloor(b, lat, floorDur)
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(sendDur[len(sendDur)/2]), "send-p50-ms")
	b.ReportMetric(ms(sendDur[len(sendDur)*99/100]), "send-p99-ms")
	if len(after) > 0 {
		b.ReportMetric(ms(after[len(after)*99/100]), "after-send-p99-ms")
	}
}

// publishFloorAt publishes n floor messages into dir, one per interval
// after waiting offset, and hands record the duration of each publishFloor.
func publishFloorAt(b *testing.B, dir *os.File, n int, offset, interval time.Duration, payload []byte, record func(time.Duration)) {
	time.Sleep(offset)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for k := range n {
		<-tick.C
		start := time.Now()
		if err := publishFloor(dir, k, payload); err != nil {
			b.Error(err)
			return
		}
		record(time.Since(start))
	}
}

// ms is d in milliseconds, the unit the latency metrics are reported in.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// reportAgainstFloor sorts lat and floor and reports the latency's p50 and
// p99, the floor's, and their ratios (the floor's when it has samples).
func reportAgainstFloor(b *testing.B, lat, floor []time.Duration) {
	slices.Sort(lat)
	slices.Sort(floor)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	if len(floor) == 0 {
		return
	}
	f50, f99 := floor[len(floor)/2], floor[len(floor)*99/100]
	b.ReportMetric(ms(f50), "floor-p50-ms")
	b.ReportMetric(ms(f99), "floor-p99-ms")
	b.ReportMetric(float64(p50)/float64(f50), "p50-ratio")
	b.ReportMetric(float64(p99)/float64(f99), "p99-ratio")
}

// floorDir opens a fresh directory for publishFloor on the filesystem
// benchChannel uses; it is closed and removed when the benchmark ends.
func floorDir(b *testing.B) *os.File {
	dir := b.TempDir()
	if base := os.Getenv("FACETS_CHANNEL_BENCH_DIR"); base != "" {
		d, err := os.MkdirTemp(base, "facets-floor-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	f, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// publishFloor is the least any durable file channel must do per message:
// create a temp file, write, fsync, close, rename into place, fsync the
// directory.
func publishFloor(dir *os.File, i int, payload []byte) error {
	tmp := filepath.Join(dir.Name(), "floor-"+strconv.Itoa(i)+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(payload); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, strings.TrimSuffix(tmp, ".tmp")+".json"); err != nil {
		return err
	}
	return dir.Sync()
}

// BenchmarkSendThroughput measures one writer, one direction, fsync on
// (payload: temp file fsync, rename, directory fsync; the counter once per
// reserved block), against the floor (publishFloor) on the same filesystem,
// interleaved op by op so load affects both alike. ratio is Send's rate
// over the floor's.
func BenchmarkSendThroughput(b *testing.B) {
	c := benchChannel(b)
	floorDir := floorDir(b)
	const text = "benchmark message of a typical short length, about one line of text"
	payload := []byte(`{"version":1,"id":"0123456789abcdef0123456789abcdef","sequence":1,"message":"` + text + `"}`)
	var sendT, floorT time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Send(ToSub, text); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := publishFloor(floorDir, i, payload); err != nil {
			b.Fatal(err)
		}
		floorT += time.Since(t1)
		sendT += t1.Sub(t0)
		i++
	}
	b.ReportMetric(float64(i)/sendT.Seconds(), "msgs/s")
	b.ReportMetric(float64(i)/floorT.Seconds(), "floor-msgs/s")
	b.ReportMetric(floorT.Seconds()/sendT.Seconds(), "ratio")
}

// BenchmarkSendBatchThroughput is the same with 64 messages per SendBatch,
// which persists the counter once and fsyncs the inbox once per batch.
func BenchmarkSendBatchThroughput(b *testing.B) {
	const batch = 64
	c := benchChannel(b)
	texts := make([]string, batch)
	for i := range texts {
		texts[i] = "benchmark message of a typical short length, about one line of text"
	}
	start := time.Now()
	msgs := 0
	for b.Loop() {
		if _, err := c.SendBatch(ToSub, texts); err != nil {
			b.Fatal(err)
		}
		msgs += batch
	}
	b.ReportMetric(float64(msgs)/time.Since(start).Seconds(), "msgs/s")
}

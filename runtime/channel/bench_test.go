package channel

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
// watcher at 1,000 msgs/s spread over 4 channels (250 msgs/s each). One op
// is one message; run with a fixed count, e.g. -benchtime=2000x.
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
	done := make(chan struct{})
	rx := NewReceiver(ToMain, store, func(d Delivery) error {
		sent, _ := strconv.ParseInt(d.Message.Text, 10, 64)
		mu.Lock()
		lat = append(lat, time.Duration(time.Now().UnixNano()-sent))
		if len(lat) == total {
			close(done)
		}
		mu.Unlock()
		return store.Record(d.Message.Receipt())
	}, nil)
	w, err := NewWatcher(ToMain, func(c *Channel) { rx.Scan(c) }, WatchOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for _, c := range chans {
		w.Add(c)
	}
	var sendMu sync.Mutex
	var sendDur []time.Duration
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
			time.Sleep(time.Duration(i) * interval / channels) // spread the channels evenly
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for range n {
				<-tick.C
				start := time.Now()
				if _, err := c.Send(ToMain, strconv.FormatInt(start.UnixNano(), 10)); err != nil {
					b.Error(err)
					return
				}
				sendMu.Lock()
				sendDur = append(sendDur, time.Since(start))
				sendMu.Unlock()
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatalf("only %d of %d messages delivered", len(lat), total)
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(sendDur)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(sendDur[len(sendDur)/2]), "send-p50-ms")
	b.ReportMetric(ms(sendDur[len(sendDur)*99/100]), "send-p99-ms")
}

// BenchmarkSendThroughput measures one writer, one direction, fsync on
// (counter and payload each: temp file fsync, rename, directory fsync).
func BenchmarkSendThroughput(b *testing.B) {
	c := benchChannel(b)
	start := time.Now()
	for b.Loop() {
		if _, err := c.Send(ToSub, "benchmark message of a typical short length, about one line of text"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
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

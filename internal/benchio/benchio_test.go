package benchio

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Every index in [0, b.N) is run exactly once, each worker has its own buffer.
func TestRunCoversEveryIndexOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	bufs := map[*byte]bool{}
	var n int
	res := testing.Benchmark(func(b *testing.B) {
		mu.Lock()
		clear(seen)
		n = b.N
		mu.Unlock()
		Run(b, 4, 16, func(_ context.Context, i int, buf []byte) error {
			mu.Lock()
			seen[i]++
			bufs[&buf[0]] = true
			mu.Unlock()
			return nil
		})
	})
	if res.N == 0 || len(seen) != n {
		t.Fatalf("ran %d distinct indexes, want %d", len(seen), n)
	}
	for i, c := range seen {
		if c != 1 || i < 0 || i >= n {
			t.Fatalf("index %d ran %d times (N %d)", i, c, n)
		}
	}
	if len(bufs) > 4*20 { // at most 4 per benchmark round; testing.Benchmark runs a few rounds
		t.Fatalf("%d distinct buffers", len(bufs))
	}
}

// Run allocates the workers' buffers before its timer and CPU count start: 4 MiB of
// them are not in the bytes allocated while it measures.
func TestRunBuffersOutsideMeasurement(t *testing.T) {
	res := testing.Benchmark(func(b *testing.B) {
		Run(b, 4, 1<<20, func(_ context.Context, i int, buf []byte) error {
			if len(buf) != 1<<20 {
				return errors.New("short buffer")
			}
			return nil
		})
	})
	if res.N == 0 || res.MemBytes >= 1<<20 {
		t.Fatalf("N %d, %d bytes allocated while measuring: the buffers were counted", res.N, res.MemBytes)
	}
	bufs := Buffers(3, 5000)
	if len(bufs) != 3 || len(bufs[0]) != 5000 || &bufs[0][0] == &bufs[1][0] {
		t.Fatalf("Buffers(3, 5000) = %d buffers of %d bytes", len(bufs), len(bufs[0]))
	}
}

// Loop stops starting calls when the duration has passed, reports the first error,
// and reports a done context.
func TestLoopStops(t *testing.T) {
	// Only the duration can end this loop. (Under load the deadline may pass before
	// any worker runs, so no count of calls is asserted.)
	done, el, err := Loop(context.Background(), Buffers(2, 8), 1<<62, time.Millisecond, func(context.Context, int, []byte) error { return nil })
	if err != nil || el < time.Millisecond {
		t.Fatalf("Loop with a duration: %d done in %v, %v", done, el, err)
	}
	boom := errors.New("boom")
	done, _, err = Loop(context.Background(), Buffers(4, 8), 100, 0, func(_ context.Context, i int, _ []byte) error {
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || done >= 100 {
		t.Fatalf("Loop with a failing call: %d done, %v", done, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if done, _, err = Loop(ctx, Buffers(1, 8), 100, 0, func(context.Context, int, []byte) error { return nil }); !errors.Is(err, context.Canceled) || done != 0 {
		t.Fatalf("Loop with a done context: %d done, %v", done, err)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 3}, {[]float64{9, 1, 1, 1, 100}, 1}} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

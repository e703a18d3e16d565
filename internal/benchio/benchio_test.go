package benchio

import (
	"context"
	"sync"
	"testing"
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

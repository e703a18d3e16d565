// Package benchio drives b.N I/O operations with a fixed number in flight, for the
// benchmarks that compare NFS servers and transports at several queue depths.
package benchio

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// Op performs operation i (0 ≤ i < b.N) using buf, a buffer owned by the calling worker.
type Op func(ctx context.Context, i int, buf []byte) error

// Run calls op b.N times from qd workers, each with its own size-byte buffer, reports
// size bytes per operation and allocations, and fails b with the first error.
func Run(b *testing.B, qd, size int, op Op) {
	b.Helper()
	ctx := context.Background()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for w := 0; w < qd; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, size)
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				if err := op(ctx, i, buf); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

// Package benchio drives I/O operations with a fixed number in flight, for the
// benchmarks and the nfsrdma bench command that compare NFS servers and transports at
// several queue depths, and summarises repeated rounds by their median.
package benchio

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Op performs operation i using buf, a buffer owned by the calling worker.
type Op func(ctx context.Context, i int, buf []byte) error

// Buffers returns qd buffers of size bytes for Loop, every page already written
// to, so that neither the allocation nor the first touch of the memory (a page fault
// per page, costly in a VM) falls into what Loop and Run measure.
func Buffers(qd, size int) [][]byte {
	bufs := make([][]byte, qd)
	for w := range bufs {
		bufs[w] = make([]byte, size)
		for i := 0; i < size; i += 4096 {
			bufs[w][i] = 0
		}
	}
	return bufs
}

// Loop calls op with i = 0, 1, 2, ... from one worker per buffer of bufs (from
// Buffers), each with its own, until n calls have started, d has passed (when d > 0),
// ctx is done or a call fails. It waits for the calls in flight and returns how many
// succeeded, the time from the start until the last one ended, and the first error.
func Loop(ctx context.Context, bufs [][]byte, n int64, d time.Duration, op Op) (done int64, elapsed time.Duration, err error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		ok       atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	// Past the deadline no worker starts another call.
	start := time.Now()
	if d > 0 {
		stop := time.AfterFunc(d, func() { next.Store(n) })
		defer stop.Stop()
	}
	for _, buf := range bufs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				if err := op(ctx, int(i), buf); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed = time.Since(start)
	if firstErr == nil {
		firstErr = parent.Err() // the caller's context ended the loop
	}
	return ok.Load(), elapsed, firstErr
}

// Run calls op b.N times (i from 0 to b.N-1) through Loop with qd buffers of size
// bytes, allocated before the timer starts, reports size bytes per operation,
// allocations, the process's CPU time per operation (cpu-ns/op, see ProcessCPU) and
// its threads' context switches per operation (switches/op, see ProcessSwitches),
// and fails b with the first error.
func Run(b *testing.B, qd, size int, op Op) {
	b.Helper()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	bufs := Buffers(qd, size)
	b.ResetTimer()
	cpu0, sw0 := ProcessCPU(), ProcessSwitches()
	_, _, err := Loop(context.Background(), bufs, int64(b.N), 0, op)
	cpu, sw := ProcessCPU()-cpu0, ProcessSwitches()-sw0
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(sw)/float64(b.N), "switches/op")
}

// Median returns the median of s (the upper one of an even count), sorting s; 0 for
// an empty s. Benchmarks that repeat a measurement in rounds report it, so that a
// round disturbed by other load on the machine does not move the result.
func Median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	return s[len(s)/2]
}

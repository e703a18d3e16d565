package nfsclient

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// BenchmarkTCP measures READ and WRITE through this client and nfsserver over TCP on
// 127.0.0.1, at 4 KiB and 1 MiB, with 1 and 32 calls in flight (queue depth).
func BenchmarkTCP(b *testing.B) {
	for _, op := range []string{"READ", "WRITE"} {
		for _, size := range []int{4 << 10, 1 << 20} {
			for _, qd := range []int{1, 32} {
				b.Run(fmt.Sprintf("%s/%dKiB/qd%d", op, size>>10, qd), func(b *testing.B) {
					benchIO(b, op, size, qd)
				})
			}
		}
	}
}

func benchIO(b *testing.B, op string, size, qd int) {
	addr, export := startServer(b)
	c, _ := dial(b, addr, export)
	ctx := context.Background()
	fh, _, err := c.Create(ctx, c.Root(), "bench", 0o644, false)
	if err != nil {
		b.Fatal(err)
	}
	const fileSize = 64 << 20
	chunk := make([]byte, 1<<20)
	for off := 0; off < fileSize; off += len(chunk) {
		if _, err := c.Write(ctx, fh, uint64(off), chunk, nfs3.Unstable); err != nil {
			b.Fatal(err)
		}
	}
	slots := fileSize / size
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	var firstErr error
	for w := 0; w < qd; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, size)
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= b.N {
					return
				}
				off := uint64((i % slots) * size)
				var err error
				if op == "READ" {
					_, _, err = c.Read(ctx, fh, off, buf)
				} else {
					_, err = c.Write(ctx, fh, off, buf, nfs3.Unstable)
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

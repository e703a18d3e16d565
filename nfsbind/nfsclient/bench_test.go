//go:build linux

package nfsclient

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
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
	benchio.Run(b, qd, size, func(ctx context.Context, i int, buf []byte) error {
		off := uint64((i % slots) * size)
		if op == "READ" {
			_, _, err := c.Read(ctx, fh, off, buf)
			return err
		}
		_, err := c.Write(ctx, fh, off, buf, nfs3.Unstable)
		return err
	})
}

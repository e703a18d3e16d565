package nfsclient

import (
	"bytes"
	"context"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
)

// A 4 KiB WRITE over RDMA between this module's client and server, at their default
// inline thresholds, goes whole in the call's Send, with AUTH_SYS credentials as large
// as a Linux client's usually are; to a server that receives 4096 bytes, as Linux's
// does, it goes with a read chunk that the server pulls by RDMA Read. The file gets the
// data either way.
func TestWrite4KiBInline(t *testing.T) {
	for _, tc := range []struct {
		name       string
		serverRecv int // ServerOptions.InlineRecv; 0: the default
		readChunks uint64
	}{{"default", 0, 0}, {"server receives 4096", 4096, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			file := &cannedFile{data: make([]byte, 1<<20)}
			rs := oncrpc.NewServer(nil)
			rs.Register(nfs3.Program, nfs3.Version, file)
			t.Cleanup(func() { rs.Close() })
			l, rt := serveOverRDMA(t, rs, &rpcrdma.ServerOptions{InlineRecv: tc.serverRecv}, nil)
			auth, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{MachineName: bytes.Repeat([]byte("h"), 32),
				UID: 1000, GID: 1000, GIDs: []uint32{4, 24, 27, 30, 46, 100, 118, 1000}})
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(ctx, rt, nfs3.FH{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28}, oncrpc.WithAuth(auth))
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, 4096)
			for i := range data {
				data[i] = byte(i*13 + 5)
			}
			before := l.Stats()
			if _, err := c.Write(ctx, nil, 8192, data, nfs3.Unstable); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(file.data[8192:8192+len(data)], data) {
				t.Fatal("the file does not hold the WRITE's data")
			}
			after := l.Stats()
			if got := after.CallsReadChunks - before.CallsReadChunks; got != tc.readChunks {
				t.Errorf("%d of the WRITE's calls came with read chunks, want %d (inline: %d)", got, tc.readChunks, after.CallsInline-before.CallsInline)
			}
		})
	}
}

package main

import (
	"context"
	"testing"
	"time"
)

// The example echoes a payload over RDMA: a large one by read and write chunk, a
// small one inline both ways.
func TestEchoOverRDMA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := run(ctx, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	if st.CallsReadChunks != 1 || st.ReadBytes < 256<<10 {
		t.Errorf("256 KiB echo: %d calls with read chunks, %d bytes pulled; want 1, 262144", st.CallsReadChunks, st.ReadBytes)
	}
	if st.WriteChunks != 1 || st.WriteBytes != 256<<10 || st.RepliesInline != 2 {
		t.Errorf("256 KiB echo: %+v; want the data in 1 write chunk and both replies' headers inline", st)
	}
	if st, err = run(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if st.CallsReadChunks != 0 || st.CallsInline != 2 || st.WriteChunks != 0 || st.RepliesInline != 2 {
		t.Errorf("100-byte echo: %+v; want both calls and both replies inline, no write chunk", st)
	}
}

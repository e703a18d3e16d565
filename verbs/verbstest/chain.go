package verbstest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// testSendChain: a chain of RDMA Writes and a Send (SendWR.Next) is posted as
// one batch, in order: when the Send's receive completes, the Writes' data is
// in place, and the completions come in chain order. A chain with a bad
// request, or longer than the room left in the send queue, posts none of its
// requests.
func (s *suite) testSendChain(t *testing.T) {
	const depth = 8
	cli, srv := s.connectPair(t, pairConfig{depth: depth})
	sink := make([]byte, 3*1024)
	smr := srv.reg(t, sink, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	rbuf := make([]byte, 64)
	rmr := srv.reg(t, rbuf, verbs.AccessLocalWrite)
	src := make([]byte, 3*1024+64)
	fill(src, 3)
	cmr := cli.reg(t, src, 0)

	for round := 0; round < 2; round++ {
		srv.recv(t, 100, verbs.SGE{MR: rmr, Length: 64})
		var wrs [4]verbs.SendWR
		for i := 0; i < 3; i++ {
			wrs[i] = verbs.SendWR{ID: uint64(i + 1), Op: verbs.OpWrite, Flags: verbs.Signaled,
				SGL:        []verbs.SGE{{MR: cmr, Offset: i * 1024, Length: 1024}},
				RemoteSTag: smr.RKey(), RemoteTO: smr.Addr() + uint64(i*1024), Next: &wrs[i+1]}
		}
		wrs[3] = verbs.SendWR{ID: 4, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Offset: 3 * 1024, Length: 64}}}
		if err := cli.qp.PostSend(&wrs[0]); err != nil {
			t.Fatalf("round %d: PostSend of a chain of 4: %v", round, err)
		}
		for i := uint64(1); i <= 3; i++ {
			cli.expect(t, i, verbs.OpcodeWrite, verbs.StatusSuccess)
		}
		cli.expect(t, 4, verbs.OpcodeSend, verbs.StatusSuccess)
		wc := srv.expect(t, 100, verbs.OpcodeRecv, verbs.StatusSuccess)
		if wc.ByteLen != 64 || !bytes.Equal(rbuf, src[3*1024:]) {
			t.Fatalf("round %d: the chain's Send delivered %d bytes, wrong data", round, wc.ByteLen)
		}
		if !bytes.Equal(sink, src[:3*1024]) {
			t.Fatalf("round %d: the chain's Writes were not placed before its Send completed", round)
		}
		clear(sink)
		clear(rbuf)
	}

	// A bad request in the middle of a chain: nothing is posted.
	srv.recv(t, 200, verbs.SGE{MR: rmr, Length: 64})
	bad := [3]verbs.SendWR{
		{ID: 10, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Length: 8}}},
		{ID: 11, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Offset: len(src), Length: 8}}},
		{ID: 12, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Length: 8}}},
	}
	bad[0].Next, bad[1].Next = &bad[1], &bad[2]
	if err := cli.qp.PostSend(&bad[0]); !errors.Is(err, verbs.ErrInvalidWR) {
		t.Fatalf("chain with an SGE outside its MR: %v, want ErrInvalidWR", err)
	}
	// A chain longer than the send queue: nothing is posted either.
	var long [depth + 1]verbs.SendWR
	for i := range long {
		long[i] = verbs.SendWR{ID: uint64(20 + i), Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Length: 8}}}
		if i > 0 {
			long[i-1].Next = &long[i]
		}
	}
	if err := cli.qp.PostSend(&long[0]); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("chain of %d on a send queue of %d: %v, want ErrQueueFull", len(long), depth, err)
	}
	// The next Send is the first the peer receives, and the first
	// completion.
	cli.send(t, verbs.SendWR{ID: 30, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: cmr, Offset: 5, Length: 8}}})
	cli.expect(t, 30, verbs.OpcodeSend, verbs.StatusSuccess)
	if wc := srv.expect(t, 200, verbs.OpcodeRecv, verbs.StatusSuccess); wc.ByteLen != 8 || !bytes.Equal(rbuf[:8], src[5:13]) {
		t.Fatalf("after the refused chains the peer received %d bytes %x, want the Send after them", wc.ByteLen, rbuf[:wc.ByteLen])
	}
}

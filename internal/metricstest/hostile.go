package metricstest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// SendBadVersion connects to the RPC-over-RDMA server at addr as a raw verbs peer,
// sends one RDMA_MSG whose transport header claims version 2, and returns the
// RDMA_ERROR code the server answered with (a conforming server says ERR_VERS).
func SendBadVersion(ctx context.Context, addr string) (rpcrdma.ErrCode, error) {
	dev := soft.New(soft.Config{})
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		return 0, err
	}
	defer pd.Close()
	cq, err := dev.CreateCQ(16)
	if err != nil {
		return 0, err
	}
	defer cq.Close()
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4})
	if err != nil {
		return 0, err
	}
	defer qp.Close()
	buf := make([]byte, 2*4096)
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite)
	if err != nil {
		return 0, err
	}
	defer mr.Close()
	if err := qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{MR: mr, Length: 4096}}}); err != nil {
		return 0, err
	}
	var priv [rpcrdma.PrivateSize]byte
	cp := rpcrdma.ConnPrivate{SendSize: 4096, RecvSize: 4096}
	if _, err := dev.Dial(ctx, addr, qp, verbs.ConnParams{PrivateData: cp.Append(priv[:0]), IRD: 4, ORD: 4}); err != nil {
		return 0, fmt.Errorf("dial %s: %w", addr, err)
	}
	// xid, vers 2, credits, RDMA_MSG, three empty chunk lists, then an RPC call
	// header (xid, CALL, rpcvers 2, prog, vers, proc, two AUTH_NONE).
	msg := binary.BigEndian.AppendUint32(buf[4096:4096], 0xbad)
	for _, w := range []uint32{2, 8, 0, 0, 0, 0, 0xbad, 0, 2, 100003, 3, 0, 0, 0, 0, 0} {
		msg = binary.BigEndian.AppendUint32(msg, w)
	}
	if err := qp.PostSend(&verbs.SendWR{ID: 2, Op: verbs.OpSend, SGL: []verbs.SGE{{MR: mr, Offset: 4096, Length: len(msg)}}}); err != nil {
		return 0, err
	}
	var wcs [4]verbs.Completion
	for {
		if err := cq.Wait(ctx); err != nil {
			return 0, err
		}
		n, err := cq.Poll(wcs[:])
		if err != nil {
			return 0, err
		}
		for _, wc := range wcs[:n] {
			if wc.Status != verbs.StatusSuccess {
				return 0, fmt.Errorf("completion %v: %w", wc.Status, wc.Err)
			}
			if wc.Opcode != verbs.OpcodeRecv {
				continue
			}
			var h rpcrdma.Header
			if _, err := h.Decode(buf[:wc.ByteLen]); err != nil {
				return 0, fmt.Errorf("server's answer: %w", err)
			}
			if h.Proc != rpcrdma.ProcError {
				return 0, errors.New("server answered " + h.Proc.String() + ", not RDMA_ERROR")
			}
			return h.ErrCode, nil
		}
	}
}

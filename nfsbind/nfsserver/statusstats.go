package nfsserver

import (
	"context"
	"encoding/binary"
	"sync/atomic"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// statusSlots are the nfsstat3 values StatusStats tells apart (RFC 1813 §2.6), in
// order; any other status counts in the slot after them.
var statusSlots = [...]nfs3.Status{
	nfs3.StatusOK, nfs3.StatusPerm, nfs3.StatusNoEnt, nfs3.StatusIO, nfs3.StatusNXIO,
	nfs3.StatusAcces, nfs3.StatusExist, nfs3.StatusXDev, nfs3.StatusNoDev, nfs3.StatusNotDir,
	nfs3.StatusIsDir, nfs3.StatusInval, nfs3.StatusFBig, nfs3.StatusNoSpc, nfs3.StatusROFS,
	nfs3.StatusMLink, nfs3.StatusNameTooLong, nfs3.StatusNotEmpty, nfs3.StatusDQuot,
	nfs3.StatusStale, nfs3.StatusRemote, nfs3.StatusBadHandle, nfs3.StatusNotSync,
	nfs3.StatusBadCookie, nfs3.StatusNotSupp, nfs3.StatusTooSmall, nfs3.StatusServerFault,
	nfs3.StatusBadType, nfs3.StatusJukebox,
}

// otherStatus is the slot of statuses not in statusSlots.
const otherStatus = len(statusSlots)

// statusSlot returns s's index in statusSlots, or otherStatus.
func statusSlot(s nfs3.Status) int {
	for i, v := range statusSlots {
		if v == s {
			return i
		}
	}
	return otherStatus
}

// StatusStats counts NFSv3 replies by procedure and nfsstat3, as `nfsstat -s` does
// not but an operator wants (how many LOOKUPs said NOENT, how many WRITEs NOSPC). Its
// Handler wraps the NFS handler; counting a reply reads its status word and adds one
// atomically, without allocating. The zero value is ready to use.
type StatusStats struct {
	counts [nfs3.NumProcs][otherStatus + 1]atomic.Uint64
}

// Handler returns h counting each reply's status into st. It keeps h's
// oncrpc.InlineHandler declaration, if any.
func (st *StatusStats) Handler(h oncrpc.Handler) oncrpc.Handler {
	sh := statusHandler{st: st, h: h}
	if ih, ok := h.(oncrpc.InlineHandler); ok {
		return statusInlineHandler{sh, ih}
	}
	return sh
}

// Each calls fn for every procedure and status counted at least once; a status
// outside RFC 1813's list is reported as nfs3.Status(^uint32(0)).
func (st *StatusStats) Each(fn func(proc nfs3.Proc, status nfs3.Status, n uint64)) {
	for p := range st.counts {
		for i := range st.counts[p] {
			n := st.counts[p][i].Load()
			if n == 0 {
				continue
			}
			s := nfs3.Status(^uint32(0))
			if i < otherStatus {
				s = statusSlots[i]
			}
			fn(nfs3.Proc(p), s, n)
		}
	}
}

// Get returns the replies to proc counted with status s.
func (st *StatusStats) Get(proc nfs3.Proc, s nfs3.Status) uint64 {
	if proc >= nfs3.NumProcs {
		return 0
	}
	return st.counts[proc][statusSlot(s)].Load()
}

type statusHandler struct {
	st *StatusStats
	h  oncrpc.Handler
}

// ServeRPC runs the handler and counts the status word its results begin with
// (every NFSv3 result but NULL's does). Errors (GARBAGE_ARGS, dropped calls) have no
// NFS status and are not counted here.
func (sh statusHandler) ServeRPC(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
	start := res.Len()
	err := sh.h.ServeRPC(ctx, req, res)
	proc := req.Header.Proc
	if err != nil || proc == uint32(nfs3.ProcNull) || proc >= nfs3.NumProcs || res.Len() < start+4 {
		return err
	}
	s := nfs3.Status(binary.BigEndian.Uint32(res.Bytes()[start:]))
	sh.st.counts[proc][statusSlot(s)].Add(1)
	return nil
}

type statusInlineHandler struct {
	statusHandler
	ih oncrpc.InlineHandler
}

func (sh statusInlineHandler) Inline(vers, proc uint32) bool { return sh.ih.Inline(vers, proc) }

//go:build linux

package nfsserver

import (
	"context"
	"hash/crc32"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The duplicate request cache remembers the results of recent non-idempotent calls
// (SETATTR, CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK) so that a
// retransmission (same client, see drcClient; same XID, procedure and arguments) gets
// the original answer instead of a spurious error such as NFS3ERR_NOENT for a REMOVE
// that already happened. A retransmission that arrives while the original is still
// executing waits for it and gets its answer (knfsd drops it and relies on the client
// to retransmit again after a timeout, which a TCP client may never do).
const drcSize = 1024

type drcKey struct {
	addr string
	xid  uint32
	proc uint32
	sum  uint32 // CRC-32C of the arguments
	n    int    // argument length
}

type drcEntry struct {
	done    bool
	results []byte
	slot    int // its place in drc.ring
	// finished is closed when the call has run: done, or failed and removed.
	finished chan struct{}
}

type drc struct {
	mu      sync.Mutex
	entries map[drcKey]*drcEntry
	ring    [drcSize]drcKey
	next    int
	hits    uint64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func nonIdempotent(p nfs3.Proc) bool {
	switch p {
	case nfs3.ProcSetattr, nfs3.ProcCreate, nfs3.ProcMkdir, nfs3.ProcSymlink, nfs3.ProcMknod,
		nfs3.ProcRemove, nfs3.ProcRmdir, nfs3.ProcRename, nfs3.ProcLink:
		return true
	}
	return false
}

// drcClient is the caller's part of a call's key: its address and port, as in knfsd
// (nfsd_cache_key_cmp compares both), since over TCP the port tells apart clients
// behind one address and a client reconnects from the same port (see oncrpc.DialTCP).
// Over RPC-over-RDMA the port is the connection manager's choice, not the client's,
// and changes with every reconnection: the key then has the address alone, as
// svcrdma sets the remote port to 0 (handle_connect_req) so that its DRC works across
// reconnections.
func drcClient(req *oncrpc.Request) string {
	if req.Netid == "rdma" || req.Netid == "rdma6" {
		if ap, ok := addrPortOf(req.RemoteAddr); ok {
			return req.Netid + " " + ap.Addr().String()
		}
	}
	return req.RemoteAddr.String()
}

// withDRC wraps the NFS handler with the duplicate request cache.
func (s *Server) withDRC(h oncrpc.Handler) oncrpc.Handler {
	c := &s.drc
	return oncrpc.HandlerFunc(func(ctx context.Context, req *oncrpc.Request, res *xdr.Encoder) error {
		if !nonIdempotent(nfs3.Proc(req.Header.Proc)) || req.RemoteAddr == nil {
			return h.ServeRPC(ctx, req, res)
		}
		args := req.Args.Rest()
		k := drcKey{addr: drcClient(req), xid: req.Header.XID, proc: req.Header.Proc,
			sum: crc32.Checksum(args, castagnoli), n: len(args)}
		c.mu.Lock()
		for {
			e, ok := c.entries[k]
			if !ok {
				break
			}
			c.hits++
			if !e.done {
				// The original is still running. Wait for its answer rather than
				// drop the retransmission: over TCP a client retransmits only after
				// reconnecting, so the original's reply, sent to the lost connection,
				// would never reach it and the call would hang.
				c.mu.Unlock()
				select {
				case <-e.finished:
				case <-ctx.Done():
					return oncrpc.ErrNoReply
				}
				c.mu.Lock()
				if !e.done {
					continue // it failed: run the call unless another try has begun
				}
			}
			res.FixedOpaque(e.results)
			c.mu.Unlock()
			s.log.Debug("duplicate request answered from cache", "xid", k.xid, "proc", nfs3.Proc(k.proc).String(), "client", k.addr)
			return nil
		}
		e := &drcEntry{finished: make(chan struct{}), slot: c.next}
		// The slot's key is evicted only if it is still that slot's entry: a call
		// that failed was removed, and its key may have been cached again since,
		// in another slot.
		if old := c.ring[c.next]; old != (drcKey{}) {
			if oe := c.entries[old]; oe != nil && oe.slot == c.next {
				delete(c.entries, old)
			}
		}
		c.ring[c.next] = k
		c.next = (c.next + 1) % drcSize
		c.entries[k] = e
		c.mu.Unlock()

		start := res.Len()
		ok := false
		defer func() {
			// Also when h panics (the oncrpc Server answers SYSTEM_ERR): a
			// retransmission then runs the call again, and waiters do not hang.
			c.mu.Lock()
			if ok {
				e.results = append([]byte(nil), res.Bytes()[start:]...)
				e.done = true
			} else if c.entries[k] == e {
				delete(c.entries, k) // let a retransmission run again
			}
			c.mu.Unlock()
			close(e.finished)
		}()
		err := h.ServeRPC(ctx, req, res)
		ok = err == nil && len(res.Payloads()) == 0
		return err
	})
}

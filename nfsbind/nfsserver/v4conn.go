//go:build linux

package nfsserver

import (
	"sync"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// maxConnIDs bounds the connections the NFSv4.1 server keeps an identity for.
const maxConnIDs = 4096

// connIDs gives each connection that carries NFSv4.1 calls the identity sessions
// bind (nfs4state.ConnID: BIND_CONN_TO_SESSION, the connection a SEQUENCE arrives on,
// the back channel). oncrpc does not report a connection's end to its handlers, so
// the table is bounded instead: past maxConnIDs, the entry of an arbitrary connection
// is dropped and the state manager told it is gone (its session bindings go; a
// connection still in use binds again with its next SEQUENCE, under a new identity).
type connIDs struct {
	mu     sync.Mutex
	ids    map[oncrpc.ServerConn]nfs4state.ConnID
	next   nfs4state.ConnID
	closed func(nfs4state.ConnID)
}

func (x *connIDs) init(closed func(nfs4state.ConnID)) {
	x.ids = make(map[oncrpc.ServerConn]nfs4state.ConnID)
	x.closed = closed
}

// of returns the identity of conn (0 for a call without a connection).
func (x *connIDs) of(conn oncrpc.ServerConn) nfs4state.ConnID {
	if conn == nil {
		return 0
	}
	x.mu.Lock()
	id, ok := x.ids[conn]
	var dropped nfs4state.ConnID
	if !ok {
		if len(x.ids) >= maxConnIDs {
			for k, v := range x.ids {
				delete(x.ids, k)
				dropped = v
				break
			}
		}
		x.next++
		id = x.next
		x.ids[conn] = id
	}
	x.mu.Unlock()
	if dropped != 0 {
		x.closed(dropped)
	}
	return id
}

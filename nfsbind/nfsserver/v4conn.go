//go:build linux

package nfsserver

import (
	"context"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// maxConnIDs bounds the connections the NFSv4.1 server keeps an identity for.
const maxConnIDs = 4096

// connIDs gives each connection that carries NFSv4.1 calls the identity sessions
// bind (nfs4state.ConnID: BIND_CONN_TO_SESSION, the connection a SEQUENCE arrives on,
// the back channel). An entry goes, and the state manager is told the connection is
// gone (its session bindings go), when the connection's context ends: oncrpc gives a
// handler a context that ends with its connection. The table is bounded as well: past
// maxConnIDs, the entry of an arbitrary connection is dropped the same way (a
// connection still in use binds again with its next SEQUENCE, under a new identity).
type connIDs struct {
	mu     sync.Mutex
	ids    map[oncrpc.ServerConn]connEntry
	next   nfs4state.ConnID
	closed func(nfs4state.ConnID)
}

type connEntry struct {
	id   nfs4state.ConnID
	stop func() bool // stops the context.AfterFunc that forgets the entry
}

func (x *connIDs) init(closed func(nfs4state.ConnID)) {
	x.ids = make(map[oncrpc.ServerConn]connEntry)
	x.closed = closed
}

// of returns the identity of conn (0 for a call without a connection); ctx is the
// call's context, which ends when conn does.
func (x *connIDs) of(ctx context.Context, conn oncrpc.ServerConn) nfs4state.ConnID {
	if conn == nil {
		return 0
	}
	x.mu.Lock()
	e, ok := x.ids[conn]
	if ok {
		x.mu.Unlock()
		return e.id
	}
	var dropped connEntry
	if len(x.ids) >= maxConnIDs {
		for k, v := range x.ids {
			delete(x.ids, k)
			dropped = v
			break
		}
	}
	x.next++
	e.id = x.next
	id := e.id
	e.stop = context.AfterFunc(ctx, func() { x.forget(conn, id) })
	x.ids[conn] = e
	x.mu.Unlock()
	if dropped.id != 0 {
		dropped.stop()
		x.closed(dropped.id)
	}
	return e.id
}

// forget drops conn's entry, if it is still id's, and tells the state manager.
func (x *connIDs) forget(conn oncrpc.ServerConn, id nfs4state.ConnID) {
	x.mu.Lock()
	e, ok := x.ids[conn]
	if ok && e.id == id {
		delete(x.ids, conn)
	}
	x.mu.Unlock()
	if ok && e.id == id {
		x.closed(id)
	}
}

// len returns the number of connections with an identity.
func (x *connIDs) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.ids)
}

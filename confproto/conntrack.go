package confproto

import (
	"context"
	"net"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// A ConnTracker finds the connection a CONF_RDMA call arrived on, so that a Service
// can apply ServerSettings to it (ServiceOptions.ConnOf). oncrpc hands a Handler the
// caller's address, not the connection; the tracker wraps Listeners and remembers
// every accepted connection that is Configurable (an RPC-over-RDMA ServerConn), keyed
// by its remote address, until it is closed. The zero ConnTracker is ready to use.
type ConnTracker struct {
	mu    sync.Mutex
	conns map[connKey]Configurable
}

type connKey struct{ network, addr string }

func keyOf(a net.Addr) connKey { return connKey{a.Network(), a.String()} }

// Wrap returns a Listener that accepts from l and records the accepted connections
// that implement Configurable. Serve the returned Listener.
func (t *ConnTracker) Wrap(l oncrpc.Listener) oncrpc.Listener { return &trackedListener{l, t} }

// ConnOf returns the live Configurable connection req came on, or nil (a connection
// that is not Configurable, such as TCP, or one the tracker did not accept).
func (t *ConnTracker) ConnOf(req *oncrpc.Request) Configurable {
	if req.RemoteAddr == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[keyOf(req.RemoteAddr)]
}

// Len returns the number of live tracked connections.
func (t *ConnTracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

func (t *ConnTracker) add(k connKey, c Configurable) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conns == nil {
		t.conns = make(map[connKey]Configurable)
	}
	t.conns[k] = c
}

func (t *ConnTracker) remove(k connKey, c Configurable) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conns[k] == c {
		delete(t.conns, k)
	}
}

type trackedListener struct {
	oncrpc.Listener
	t *ConnTracker
}

func (l *trackedListener) Accept(ctx context.Context) (oncrpc.ServerConn, error) {
	c, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	cfg, ok := c.(Configurable)
	if !ok {
		return c, nil
	}
	k := keyOf(c.RemoteAddr())
	l.t.add(k, cfg)
	return &trackedConn{ServerConn: c, t: l.t, key: k, cfg: cfg}, nil
}

// trackedConn forgets the connection when it is closed.
type trackedConn struct {
	oncrpc.ServerConn
	t    *ConnTracker
	key  connKey
	cfg  Configurable
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.t.remove(c.key, c.cfg) })
	return c.ServerConn.Close()
}

// CONF_RDMA maxrdmaread 0 (seed §6.2): "If zero, the peer MUST NOT issue requests which
// require RDMA Read to satisfy, as no transfer will be possible." A side that announced 0
// is never the target of RDMA Reads: a client sends no read chunks, a server no reply
// read chunks; and a side whose peer announced 0 issues none.

package rpcrdma

import "errors"

// ErrNoReadChunks is wrapped by the error of a call that fits neither inline nor without
// read chunks on a connection whose client announced maxrdmaread 0 (SetReadTarget).
var ErrNoReadChunks = errors.New("rpcrdma: call needs read chunks but the client announced maxrdmaread 0")

// errPeerNoReads is the cause of a reply refused because it holds read chunks while
// the server announced maxrdmaread 0.
var errPeerNoReads = errors.New("reply read chunks from a server that announced maxrdmaread 0")

// SetReadTarget implements confproto.ReadTarget for the current connection: allowed is
// false when the client announced maxrdmaread 0 in CONF_RDMA, after which the server
// must not RDMA Read from it, so calls that do not fit inline fail with an error
// wrapping ErrNoReadChunks instead of going as read chunks. A reconnection allows read
// chunks again.
func (c *Client) SetReadTarget(allowed bool) {
	cc := c.current()
	if cc == nil {
		return
	}
	cc.mu.Lock()
	cc.noReadChunks = !allowed
	cc.mu.Unlock()
}

// SetReadTarget implements confproto.ReadTarget: allowed is false when the server
// announced maxrdmaread 0 in CONF_RDMA, after which the client must not RDMA Read from
// it, so replies too long for inline and the reply chunk are refused (ERR_CHUNK) instead
// of going as read chunks (ServerOptions.ReplyReadChunks).
func (sc *ServerConn) SetReadTarget(allowed bool) { sc.noReadTarget.Store(!allowed) }

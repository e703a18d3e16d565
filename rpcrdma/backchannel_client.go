// Client side of the reverse direction (Linux backchannel.c): CALLs the server sends
// arrive in receives kept posted for them, run on the ClientOptions.Backchannel handler,
// and are answered on the connection they came on.

package rpcrdma

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// clientReverseCall is a reverse call received by a client connection: the receive
// buffer holding it stays taken until its reply has been copied into a send buffer.
type clientReverseCall struct {
	call oncrpc.ServerCall
	cc   *clientConn
	idx  int
	xid  uint32
}

var clientReversePool = sync.Pool{New: func() any {
	rc := new(clientReverseCall)
	rc.call.Cookie = rc
	return rc
}}

// dialAddr is the server's address as dialled, for the callback service's requests.
type dialAddr string

func (a dialAddr) Network() string { return "rdma" }
func (a dialAddr) String() string  { return string(a) }

// startBackchannel starts the callback service when the options ask for one, and sizes
// the receives kept posted for it.
func (c *Client) startBackchannel() {
	c.extraRecvs = clientExtraRecvs
	o := c.opts.Backchannel
	if o == nil || o.Handler == nil {
		return
	}
	bo := *o
	bo.MaxRequests = min(o.MaxReqs(), MaxBackchannelRequests) // each holds a receive buffer
	c.bcGrant = bo.MaxRequests
	c.extraRecvs += c.bcGrant
	c.bcs = oncrpc.NewBackchannelServer(&bo, dialAddr(c.addr), c.writeReverseReply)
}

// reverseCall takes the reverse call body received in receive buffer idx, in the
// completion context: it hands it to the callback service or drops it (counted) and
// reposts the buffer.
func (cc *clientConn) reverseCall(idx int, body []byte) {
	c := cc.c
	if c.bcs == nil {
		// No callback service: dropped, as Linux's client does (rpcrdma_is_bcall
		// declines it and no call matches its XID).
		c.reverseDropped.Add(1)
		cc.repost(idx)
		return
	}
	rc := clientReversePool.Get().(*clientReverseCall)
	rc.cc, rc.idx, rc.xid = cc, idx, binary.BigEndian.Uint32(body)
	rc.call.Msg = oncrpc.Message{Inline: body}
	if !c.bcs.Deliver(&rc.call) { // counted as dropped by the callback service
		cc.repost(idx)
		c.putReverse(rc)
	}
}

func (c *Client) putReverse(rc *clientReverseCall) {
	rc.cc = nil
	rc.call.Msg = oncrpc.Message{}
	clientReversePool.Put(rc)
}

// errReverseConnGone: the connection a reverse call came on is gone, so its reply
// cannot be sent (a reverse call belongs to its connection).
var errReverseConnGone = errors.New("rpcrdma: reverse reply: the call's connection is gone")

// writeReverseReply is the callback service's oncrpc.BackchannelReplyFunc: it sends the
// reply as RDMA_MSG without chunks, granting our reverse credits, and gives the call's
// receive buffer back. A reply over the inline threshold is replaced by SYSTEM_ERR
// (reverse-direction messages travel without chunks).
func (c *Client) writeReverseReply(call *oncrpc.ServerCall, reply *oncrpc.Message) error {
	rc, ok := call.Cookie.(*clientReverseCall)
	if !ok {
		return errors.New("rpcrdma: reverse reply for a call of another transport")
	}
	defer c.putReverse(rc)
	cc := rc.cc
	if cc.isDead.Load() {
		return errReverseConnGone // its receive buffers went with it
	}
	if reply == nil {
		cc.repost(rc.idx)
		return nil
	}
	ctx := context.Background() // the waits below end with the connection
	idx, buf, err := cc.ep.getSendBuf(ctx)
	if err != nil {
		return fmt.Errorf("rpcrdma: reverse reply xid %#08x: %w", rc.xid, err)
	}
	cc.mu.Lock()
	limit := min(cc.inlineSend, len(buf))
	cc.mu.Unlock()
	b := appendReverseHeader(buf[:0], rc.xid, uint32(c.bcGrant))
	if MinSize+reply.Len() <= limit {
		b = xdr.Flatten(b, reply.Inline, reply.Payloads)
	} else {
		c.reverseTooLarge.Add(1)
		c.opts.Logger.Warn("reverse reply exceeds the inline threshold; answering SYSTEM_ERR",
			"xid", rc.xid, "size", MinSize+reply.Len(), "limit", limit)
		rh := oncrpc.ReplyHeader{XID: rc.xid, Stat: oncrpc.MsgAccepted, Verf: oncrpc.OpaqueAuth{Flavor: oncrpc.AuthNone}, AcceptStat: oncrpc.SystemErr}
		b = rh.Append(b)
	}
	// The reply is copied out: the call's receive buffer can take the next message.
	cc.repost(rc.idx)
	if tr := c.opts.Trace; tr != nil {
		tr(true, b)
	}
	if err := cc.ep.postSendBuf(ctx, idx, len(b), verbs.OpSend, 0, nil); err != nil {
		return fmt.Errorf("rpcrdma: reverse reply xid %#08x: %w", rc.xid, err)
	}
	return nil
}

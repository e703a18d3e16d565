package soft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// maxFPDUFor returns the FPDU size to use on c.
func (d *Device) maxFPDUFor(c net.Conn) int {
	if d.cfg.MaxFPDU > 0 {
		return d.cfg.MaxFPDU
	}
	if f := fpduFromMSS(tcpMSS(c)); f > 0 {
		return f
	}
	return DefaultMaxFPDU
}

// fpduFromMSS is the FPDU size for a TCP MSS: the MSS rounded down to a
// multiple of 8 (as siw does), or 0 when the MSS is unknown or too small.
func fpduFromMSS(mss int) int {
	if f := mss &^ 7; f >= 64 {
		return f
	}
	return 0
}

func clampIRDORD(v int) int {
	switch {
	case v <= 0:
		return DefaultIRDORD
	case v > MaxIRDORD:
		return MaxIRDORD
	}
	return v
}

// watchCtx makes blocking I/O on c fail when ctx ends; call the returned
// function to stop watching.
func watchCtx(ctx context.Context, c net.Conn) func() bool {
	c.SetDeadline(ctxDeadline(ctx))
	return context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
}

// ctxCause returns the context error behind an I/O error caused by
// watchCtx's deadline (the socket deadline can fire a moment before the
// context reports it), or nil.
func ctxCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ne net.Error
	if dl, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func (d *Device) checkQP(qp verbs.QP, what string) (*queuePair, error) {
	q, ok := qp.(*queuePair)
	if !ok || q == nil {
		return nil, fmt.Errorf("soft: %s: QP is nil or not from this provider", what)
	}
	if q.dev != d {
		return nil, fmt.Errorf("soft: %s: QP belongs to another device", what)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state != verbs.StateInit {
		return nil, fmt.Errorf("soft: %s: %w: QP is %v, want Init", what, verbs.ErrBadState, q.state)
	}
	q.state = verbs.StateConnecting
	return q, nil
}

// abortConnect returns a QP whose connection setup failed to StateInit.
func (q *queuePair) abortConnect() {
	q.mu.Lock()
	if q.state == verbs.StateConnecting {
		q.state = verbs.StateInit
	}
	q.mu.Unlock()
}

// Dial connects qp to the iWARP listener at addr (host:port): TCP connect,
// MPA Request, MPA Reply, then (peer-to-peer model) the RTR frame.
func (d *Device) Dial(ctx context.Context, addr string, qp verbs.QP, p verbs.ConnParams) (*verbs.ConnInfo, error) {
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return nil, fmt.Errorf("soft: Dial: %w: %d bytes, at most %d", verbs.ErrPrivateDataTooLong, len(p.PrivateData), verbs.MaxPrivateData)
	}
	q, err := d.checkQP(qp, "Dial")
	if err != nil {
		return nil, err
	}
	info, err := d.dial(ctx, addr, q, p)
	if err != nil {
		q.abortConnect()
		return nil, err
	}
	return info, nil
}

func (d *Device) dial(ctx context.Context, addr string, q *queuePair, p verbs.ConnParams) (*verbs.ConnInfo, error) {
	dialer := d.cfg.Dialer
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("soft: Dial %s: %w", addr, err)
	}
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
	}()
	stop := watchCtx(ctx, conn)
	defer stop()

	ird, ord := clampIRDORD(p.IRD), clampIRDORD(p.ORD)
	req := iwarp.MPAFrame{Kind: iwarp.MPARequest, Revision: uint8(d.cfg.MPARevision), PrivateData: p.PrivateData}
	if d.cfg.CRC {
		req.Flags |= iwarp.FlagCRC
	}
	enhanced := d.cfg.MPARevision == iwarp.MPARevision2
	if enhanced {
		req.Flags |= iwarp.FlagEnhanced
		req.IRD, req.ORD = uint16(ird), uint16(ord)
		switch d.cfg.P2P {
		case RTRWrite:
			req.PeerToPeer, req.RTR = true, iwarp.RTRWrite
		case RTRRead:
			req.PeerToPeer, req.RTR = true, iwarp.RTRRead
		}
	}
	var buf [iwarp.MaxMPAFrameLen]byte
	b, err := req.Append(buf[:0])
	if err != nil {
		return nil, fmt.Errorf("soft: Dial %s: %w", addr, err)
	}
	if _, err := conn.Write(b); err != nil {
		return nil, fmt.Errorf("soft: Dial %s: sending MPA Request: %w", addr, err)
	}
	rep, err := iwarp.ReadMPAFrame(conn, buf[:], iwarp.MPAReply)
	if err != nil {
		if cerr := ctxCause(ctx, err); cerr != nil {
			return nil, fmt.Errorf("soft: Dial %s: waiting for MPA Reply: %w", addr, cerr)
		}
		var pe *iwarp.ProtocolError
		if errors.As(err, &pe) {
			// An invalid Reply (key, revision, markers, private data
			// length, enhanced block) is answered with the LLP Terminate
			// RFC 5044 assigns to it (2/0/0x04), with a CRC: whether CRC
			// was agreed is unknowable, and a receiver without CRC
			// ignores the field.
			d.sendMPATerminate(conn, pe.Code, true)
		}
		return nil, fmt.Errorf("soft: Dial %s: MPA Reply: %w", addr, err)
	}
	if rep.Rejected() {
		return nil, &verbs.RejectedError{PrivateData: append([]byte(nil), rep.PrivateData...)}
	}
	if enhanced && !rep.Enhanced() {
		return nil, fmt.Errorf("soft: Dial %s: MPA Reply is revision %d without the enhanced bit, request was enhanced", addr, rep.Revision)
	}
	rtr := RTRNone
	if rep.Enhanced() {
		// RFC 6581 §9.1: the initiator MUST set its IRD at least to the
		// responder ORD (the Read Requests the responder will send us:
		// relaxed like siw, our IRD is raised to it within our maximum,
		// beyond which we refuse with "insufficient IRD") and its ORD at
		// most to the responder IRD. A responder ORD or IRD of 0x3FFF
		// means "not negotiated": the initiator MUST leave its IRD,
		// respectively its ORD, unchanged.
		if rep.ORD != iwarp.IRDORDNotNegotiated {
			if int(rep.ORD) > MaxIRDORD {
				d.sendMPATerminate(conn, iwarp.TermLLPInsufficientIRD, rep.CRC())
				return nil, fmt.Errorf("soft: Dial %s: peer ORD %d exceeds our maximum IRD %d", addr, rep.ORD, MaxIRDORD)
			}
			ird = max(ird, int(rep.ORD))
		}
		if rep.IRD != iwarp.IRDORDNotNegotiated {
			ord = min(ord, int(rep.IRD))
		}
		if req.PeerToPeer {
			switch {
			case !rep.PeerToPeer:
			case rep.RTR&iwarp.RTRWrite != 0 && req.RTR&iwarp.RTRWrite != 0:
				rtr = RTRWrite
			case rep.RTR&iwarp.RTRRead != 0 && req.RTR&iwarp.RTRRead != 0:
				rtr = RTRRead
			default:
				d.sendMPATerminate(conn, iwarp.TermLLPNoMatchingRTR, rep.CRC())
				return nil, fmt.Errorf("soft: Dial %s: peer selected RTR %#x, we offered %#x", addr, rep.RTR, req.RTR)
			}
		}
	}
	stop()
	conn.SetDeadline(time.Time{})
	peerPD := append([]byte(nil), rep.PrivateData...)
	d.cfg.Logger.Debug("connected", "remote", conn.RemoteAddr(), "mpa_rev", rep.Revision, "crc", rep.CRC(),
		"ird", ird, "ord", ord, "rtr", rtr)
	if err := q.start(conn, rep.CRC(), ird, ord, d.maxFPDUFor(conn), false, rtr); err != nil {
		return nil, fmt.Errorf("soft: Dial %s: %w", addr, err)
	}
	ok = true
	return &verbs.ConnInfo{PrivateData: peerPD, IRD: ird, ORD: ord, LocalAddr: conn.LocalAddr(), RemoteAddr: conn.RemoteAddr()}, nil
}

// sendMPATerminate sends a Terminate for an LLP-level connection setup
// failure detected by the initiator in the MPA Reply, then half-closes and
// drains the connection like a Reject (lingerClose), so the Terminate is not
// lost to a RST. The caller closes c. The device counts it (Stats).
func (d *Device) sendMPATerminate(c net.Conn, code iwarp.TermCode, crc bool) {
	d.terms.sent[layerSlot(code.Layer())].Add(1)
	t := iwarp.NewTerminate(code, nil)
	if b, err := iwarp.AppendTerminateFPDU(nil, &t, 1, crc); err == nil {
		c.Write(b)
	}
	lingerClose(c)
}

// listener is the software provider's verbs.Listener.
type listener struct {
	dev   *Device
	ln    net.Listener
	reqs  chan *connRequest
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
	mu    sync.Mutex
	conns map[net.Conn]struct{} // connections in the MPA exchange
}

// Listen accepts iWARP connection requests on addr.
func (d *Device) Listen(ctx context.Context, addr string) (verbs.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("soft: Listen %s: %w", addr, err)
	}
	l := &listener{dev: d, ln: ln, reqs: make(chan *connRequest), done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func (l *listener) Addr() net.Addr { return l.ln.Addr() }

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond) // e.g. EMFILE: back off
			continue
		}
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		l.wg.Add(1)
		go l.handshake(c)
	}
}

func (l *listener) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// handshake reads the MPA Request and hands the connection request to
// Accept.
func (l *listener) handshake(c net.Conn) {
	defer l.wg.Done()
	c.SetDeadline(time.Now().Add(DefaultMPATimeout))
	cr := &connRequest{l: l, conn: c}
	f, err := iwarp.ReadMPAFrame(c, cr.buf[:], iwarp.MPARequest)
	if err != nil {
		l.dev.cfg.Logger.Info("MPA request refused", "remote", c.RemoteAddr(), "error", err)
		var pe *iwarp.ProtocolError
		if errors.As(err, &pe) {
			// A request we cannot accept (key, revision, markers, private
			// data length, enhanced block): answer with a Reject before
			// closing (RFC 5044 §7.1), not with a bare close.
			rej := iwarp.MPAFrame{Kind: iwarp.MPAReply, Flags: iwarp.FlagReject, Revision: rejectRevision(cr.buf[17])}
			if b, err := rej.Append(cr.buf[:0]); err == nil {
				c.Write(b)
			}
			lingerClose(c)
		}
		l.untrack(c)
		c.Close()
		return
	}
	cr.req = f
	select {
	case l.reqs <- cr:
	case <-l.done:
		l.untrack(c)
		c.Close()
	}
}

// rejectRevision is the MPA revision of a Reject that refuses a request of
// revision rev: the request's own for the revisions we speak (0 is answered
// as 1, see replyRevision), else the highest we support, 2 (RFC 5044 §7.1:
// a responder that cannot use the requested revision answers with its
// own).
func rejectRevision(rev uint8) uint8 {
	switch rev {
	case 0:
		return iwarp.MPARevision1
	case iwarp.MPARevision1, iwarp.MPARevision2:
		return rev
	}
	return iwarp.MPARevision2
}

// Closing after a Reject. The Reject must reach the peer before the
// connection ends, and closing a socket with unread bytes (the rest of a
// refused request, anything sent behind it) makes TCP send a RST, which can
// overtake and destroy the Reject. So the connection is half-closed (FIN
// right behind the Reject) and what the peer still sends is read and
// dropped, up to rejectDrainMax bytes or rejectLinger, whichever comes
// first; a peer that has read the Reject closes and ends the wait at once.
const (
	rejectLinger   = time.Second
	rejectDrainMax = 64 << 10
)

// lingerClose half-closes c after a Reject and drains it (see rejectLinger).
// The caller closes c afterwards.
func lingerClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(rejectLinger))
	var buf [512]byte
	for n := 0; n < rejectDrainMax; {
		k, err := c.Read(buf[:])
		n += k
		if err != nil {
			return
		}
	}
}

// errRejectSent marks an Accept that refused the request itself, with an
// MPA Reject whose connection lingerCloseAsync closes.
var errRejectSent = errors.New("connection refused with an MPA Reject")

// lingerCloseAsync runs lingerClose and then closes c in a goroutine that
// the listener tracks (Close cuts it short and waits for it), so a ULP's
// Reject does not wait for the peer. If the listener is closed, c is
// closed at once.
func (l *listener) lingerCloseAsync(c net.Conn) {
	l.mu.Lock()
	select {
	case <-l.done:
		l.mu.Unlock()
		c.Close()
		return
	default:
	}
	l.conns[c] = struct{}{}
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		lingerClose(c)
		l.untrack(c)
		c.Close()
	}()
}

func (l *listener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	select {
	case cr := <-l.reqs:
		return cr, nil
	case <-l.done:
		return nil, fmt.Errorf("soft: Accept: %w", verbs.ErrClosed)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.ln.Close()
		l.mu.Lock()
		for c := range l.conns {
			c.SetDeadline(time.Unix(1, 0))
		}
		l.mu.Unlock()
	})
	l.wg.Wait()
	return nil
}

// connRequest is the software provider's verbs.ConnRequest.
type connRequest struct {
	l    *listener
	conn net.Conn
	buf  [iwarp.MaxMPAFrameLen]byte
	req  iwarp.MPAFrame
	mu   sync.Mutex
	used bool
}

func (cr *connRequest) PrivateData() []byte  { return cr.req.PrivateData }
func (cr *connRequest) IRD() int             { return int(cr.req.IRD) }
func (cr *connRequest) ORD() int             { return int(cr.req.ORD) }
func (cr *connRequest) RemoteAddr() net.Addr { return cr.conn.RemoteAddr() }

func (cr *connRequest) take() error {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.used {
		return errors.New("soft: connection request already accepted or rejected")
	}
	cr.used = true
	cr.l.untrack(cr.conn)
	return nil
}

// replyRevision is the revision to answer with: the request's, 1 for 0.
func (cr *connRequest) replyRevision() uint8 {
	if cr.req.Revision == 0 {
		return iwarp.MPARevision1
	}
	return cr.req.Revision
}

func (cr *connRequest) Reject(privateData []byte) error {
	if len(privateData) > verbs.MaxPrivateData {
		return fmt.Errorf("soft: Reject: %w: %d bytes", verbs.ErrPrivateDataTooLong, len(privateData))
	}
	if err := cr.take(); err != nil {
		return err
	}
	rej := iwarp.MPAFrame{Kind: iwarp.MPAReply, Flags: iwarp.FlagReject, Revision: cr.replyRevision(), PrivateData: privateData}
	if cr.req.Enhanced() {
		rej.Flags |= iwarp.FlagEnhanced
	}
	b, err := rej.Append(nil)
	if err != nil {
		cr.conn.Close()
		return fmt.Errorf("soft: Reject: %w", err)
	}
	cr.conn.SetWriteDeadline(time.Now().Add(DefaultMPATimeout))
	if _, err := cr.conn.Write(b); err != nil {
		cr.conn.Close()
		return fmt.Errorf("soft: Reject: sending MPA Reply: %w", err)
	}
	cr.l.lingerCloseAsync(cr.conn)
	return nil
}

func (cr *connRequest) Accept(ctx context.Context, qp verbs.QP, p verbs.ConnParams) (*verbs.ConnInfo, error) {
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return nil, fmt.Errorf("soft: Accept: %w: %d bytes, at most %d", verbs.ErrPrivateDataTooLong, len(p.PrivateData), verbs.MaxPrivateData)
	}
	d := cr.l.dev
	q, err := d.checkQP(qp, "Accept")
	if err != nil {
		return nil, err
	}
	if err := cr.take(); err != nil {
		q.abortConnect()
		return nil, err
	}
	info, err := cr.accept(ctx, q, p)
	if err != nil {
		q.abortConnect()
		if !errors.Is(err, errRejectSent) { // else lingerCloseAsync closes it
			cr.conn.Close()
		}
		return nil, err
	}
	return info, nil
}

func (cr *connRequest) accept(ctx context.Context, q *queuePair, p verbs.ConnParams) (*verbs.ConnInfo, error) {
	d := cr.l.dev
	req := &cr.req
	crc := req.CRC() || d.cfg.CRC
	ird, ord := clampIRDORD(p.IRD), clampIRDORD(p.ORD)
	rep := iwarp.MPAFrame{Kind: iwarp.MPAReply, Revision: cr.replyRevision(), PrivateData: p.PrivateData}
	if crc {
		rep.Flags |= iwarp.FlagCRC
	}
	if req.Enhanced() {
		rep.Flags |= iwarp.FlagEnhanced
		// RFC 6581 §9.1: the responder MUST set its ORD at most to the
		// initiator IRD; its IRD is raised to the initiator ORD (relaxed,
		// like siw) within our maximum. An initiator ORD of 0x3FFF ("not
		// negotiated") leaves our IRD unchanged and is answered with an
		// IRD of 0x3FFF, an initiator IRD of 0x3FFF leaves our ORD
		// unchanged and is answered with an ORD of 0x3FFF.
		ordNegotiated := req.IRD != iwarp.IRDORDNotNegotiated
		irdNegotiated := req.ORD != iwarp.IRDORDNotNegotiated
		if ordNegotiated {
			ord = min(ord, int(req.IRD))
		}
		if irdNegotiated {
			ird = max(ird, min(int(req.ORD), MaxIRDORD))
		}
		if req.PeerToPeer {
			rep.PeerToPeer = true
			switch {
			case req.RTR&iwarp.RTRWrite != 0:
				rep.RTR = iwarp.RTRWrite
			case req.RTR&iwarp.RTRRead != 0:
				rep.RTR = iwarp.RTRRead
				ird = max(ird, 1)
			default:
				// RFC 6581 §9.2: refuse, naming the RTR types we support.
				cr.conn.SetWriteDeadline(time.Now().Add(time.Second))
				rej := iwarp.MPAFrame{Kind: iwarp.MPAReply, Flags: iwarp.FlagReject | iwarp.FlagEnhanced, Revision: rep.Revision,
					PeerToPeer: true, RTR: iwarp.RTRWrite | iwarp.RTRRead}
				if b, err := rej.Append(nil); err == nil {
					cr.conn.Write(b)
				}
				cr.l.lingerCloseAsync(cr.conn)
				return nil, fmt.Errorf("soft: Accept: %w: the initiator offers no RTR type we generate (%#x)", errRejectSent, req.RTR)
			}
		}
		rep.IRD, rep.ORD = uint16(ird), uint16(ord)
		if !irdNegotiated {
			rep.IRD = iwarp.IRDORDNotNegotiated
		}
		if !ordNegotiated {
			rep.ORD = iwarp.IRDORDNotNegotiated
		}
	}
	stop := watchCtx(ctx, cr.conn)
	b, err := rep.Append(nil)
	if err != nil {
		stop()
		return nil, fmt.Errorf("soft: Accept: %w", err)
	}
	if _, err := cr.conn.Write(b); err != nil {
		stop()
		return nil, fmt.Errorf("soft: Accept: sending MPA Reply: %w", err)
	}
	stop()
	cr.conn.SetDeadline(time.Time{})
	peerPD := append([]byte(nil), req.PrivateData...)
	d.cfg.Logger.Debug("accepted", "remote", cr.conn.RemoteAddr(), "mpa_rev", rep.Revision, "crc", crc,
		"ird", ird, "ord", ord, "p2p", rep.PeerToPeer, "rtr", rep.RTR)
	if err := q.start(cr.conn, crc, ird, ord, d.maxFPDUFor(cr.conn), true, RTRNone); err != nil {
		return nil, fmt.Errorf("soft: Accept: %w", err)
	}
	return &verbs.ConnInfo{PrivateData: peerPD, IRD: ird, ORD: ord, LocalAddr: cr.conn.LocalAddr(), RemoteAddr: cr.conn.RemoteAddr()}, nil
}

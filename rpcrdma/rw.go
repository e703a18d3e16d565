package rpcrdma

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// The RDMA Read/Write engine (Linux svc_rdma_rw.c): pulling read chunks straight into
// their place in a registered reassembly buffer, and pushing payloads into a peer's write
// or reply chunks.

// ErrChunkPlacement reports read chunks that cannot be placed into the message: a position
// beyond the inline data, or a message larger than the reassembly buffer. A responder
// answers ERR_CHUNK.
var ErrChunkPlacement = errors.New("read chunks do not fit the message")

// A piece is one step of reassembly: inline bytes, chunk data, or XDR roundup zeros.
type piece struct {
	kind   uint8 // pieceInline, pieceRemote, pieceZero
	dstOff int
	n      int
	srcOff int            // pieceInline: offset in the inline source
	seg    chunks.Segment // pieceRemote: the remote memory (Length = n)
}

const (
	pieceInline = iota
	pieceRemote
	pieceZero
)

// assembler plans and runs the reassembly of one message. It is reused.
type assembler struct {
	plan    []piece
	pzrc    []chunks.Segment
	grouped []chunks.ReadChunk
	wr      verbs.SendWR
	sge     [1]verbs.SGE

	// State of a pull posted from the receive context (start): its chained Reads,
	// the Read credits they hold, the message length, and the completion callback.
	wrs   []rdmaWR
	held  int
	total int
	done  func(err error)
}

// remotes returns how many RDMA Reads the plan takes.
func (a *assembler) remotes() int {
	k := 0
	for _, p := range a.plan {
		if p.kind == pieceRemote {
			k++
		}
	}
	return k
}

// start executes the plan into mr's buffer without waiting: inline pieces are copied
// from inline now, and every remote piece becomes one RDMA Read of a single chain,
// posted at once, that completes a waiter calling done (in the completion context).
// The caller has taken the Reads' credits (a.held), checked that the chain fits
// (endpoint.maxChain), and holds held of its send-queue slots (all of them: start never
// blocks). After start returns nil, inline is no longer needed and a belongs to the
// completion; on failure nothing was posted, the held slots are given back and done is
// not called.
func (a *assembler) start(ctx context.Context, e *endpoint, mr verbs.MR, inline []byte, held int, done func(err error)) error {
	a.placeLocal(mr.Buf(), inline)
	a.wrs = a.wrs[:0]
	for _, p := range a.plan {
		if p.kind == pieceRemote {
			a.wrs = append(a.wrs, rdmaWR{
				wr:  verbs.SendWR{Op: verbs.OpRead, RemoteSTag: p.seg.Handle, RemoteTO: p.seg.Offset},
				sge: [1]verbs.SGE{{MR: mr, Offset: p.dstOff, Length: p.n}},
			})
		}
	}
	if len(a.wrs) == 0 {
		done(nil)
		return nil
	}
	w := e.newWaiterFunc(done)
	if err := e.postChain(ctx, a.wrs, -1, 0, 0, 0, held, w); err != nil {
		e.freeWaiter(w)
		return err
	}
	return nil
}

// placeLocal fills the pieces that need no RDMA Read: inline bytes copied from inline,
// XDR roundup zeroed. The remote pieces' ranges are disjoint from them, so this may run
// before or after the Reads are posted.
func (a *assembler) placeLocal(buf, inline []byte) {
	for _, p := range a.plan {
		switch p.kind {
		case pieceInline:
			copy(buf[p.dstOff:p.dstOff+p.n], inline[p.srcOff:p.srcOff+p.n])
		case pieceZero:
			clear(buf[p.dstOff : p.dstOff+p.n])
		}
	}
}

// planAssembly computes the pieces of the whole XDR stream. The inline source is either
// inline (local bytes) or, when pzrc is not empty, the position-zero read chunk. rcs are
// the read chunks at nonzero positions in increasing order. Chunk data is followed by its
// XDR roundup (zeros) unless the sender already included it; the inline source continues
// at the next 4-byte boundary (seed §3.7). It returns the total length.
func (a *assembler) planAssembly(inlineLen int, pzrc []chunks.Segment, rcs []chunks.ReadChunk, limit int) (int, error) {
	a.plan = a.plan[:0]
	if len(pzrc) > 0 {
		inlineLen = int(min(chunks.TotalLength(pzrc), uint64(limit)+1))
	}
	dst, src := 0, 0
	for _, rc := range rcs {
		pos := int(rc.Position)
		gap := pos - dst
		if gap < 0 || src+gap > inlineLen {
			return 0, fmt.Errorf("rpcrdma: read chunk at position %d beyond the %d bytes of inline data: %w", pos, inlineLen, ErrChunkPlacement)
		}
		if gap > 0 {
			a.plan = append(a.plan, piece{kind: pieceInline, dstOff: dst, n: gap, srcOff: src})
			dst += gap
			src += gap
		}
		l := rc.Length()
		if uint64(dst)+chunks.RoundUp(l) > uint64(limit) {
			return 0, fmt.Errorf("rpcrdma: read chunk at position %d of %d bytes exceeds the %d-byte message limit: %w", pos, l, limit, ErrChunkPlacement)
		}
		for _, s := range rc.Segments {
			if s.Length == 0 {
				continue
			}
			a.plan = append(a.plan, piece{kind: pieceRemote, dstOff: dst, n: int(s.Length), seg: s})
			dst += int(s.Length)
		}
		if p := int(chunks.Pad(l)); p > 0 {
			a.plan = append(a.plan, piece{kind: pieceZero, dstOff: dst, n: p})
			dst += p
		}
	}
	if rest := inlineLen - src; rest > 0 {
		a.plan = append(a.plan, piece{kind: pieceInline, dstOff: dst, n: rest, srcOff: src})
		dst += rest
	}
	if dst > limit {
		return 0, fmt.Errorf("rpcrdma: message of %d bytes exceeds the %d-byte limit: %w", dst, limit, ErrChunkPlacement)
	}
	if len(pzrc) > 0 {
		// Turn inline pieces into reads of the matching parts of the PZRC.
		a.pzrc = append(a.pzrc[:0], pzrc...)
		out := a.plan[:0:0]
		for _, p := range a.plan {
			if p.kind != pieceInline {
				out = append(out, p)
				continue
			}
			out = a.appendPZRC(out, p)
		}
		a.plan = append(a.plan[:0], out...)
	}
	return dst, nil
}

// appendPZRC appends remote pieces covering inline bytes [p.srcOff, p.srcOff+p.n) of the
// position-zero chunk.
func (a *assembler) appendPZRC(out []piece, p piece) []piece {
	off, need, dst := p.srcOff, p.n, p.dstOff
	base := 0
	for _, s := range a.pzrc {
		l := int(s.Length)
		if need == 0 {
			break
		}
		if off >= base+l {
			base += l
			continue
		}
		in := off - base
		n := min(l-in, need)
		out = append(out, piece{kind: pieceRemote, dstOff: dst, n: n,
			seg: chunks.Segment{Handle: s.Handle, Length: uint32(n), Offset: s.Offset + uint64(in)}})
		dst += n
		off += n
		need -= n
		base += l
	}
	return out
}

// run executes the plan into mr's buffer: inline pieces are copied from inline, remote
// pieces are RDMA-Read, at most ord at a time. When tokens is not nil, every Read also
// holds one credit of tokens (a budget shared by the connection's concurrent pulls, so
// the connection as a whole never has more Reads in flight than its ORD); a pull that
// would wait for a credit first waits for its own Reads and gives their credits back, so
// two pulls can never block each other.
func (a *assembler) run(ctx context.Context, e *endpoint, mr verbs.MR, inline []byte, ord int, tokens *credits.Window) error {
	ord = max(ord, 1)
	inFlight := 0
	w := e.newWaiter()
	drain := func(more bool) error {
		err := e.wait(ctx, w)
		if tokens != nil {
			for ; inFlight > 0; inFlight-- {
				tokens.Release()
			}
		}
		inFlight = 0
		if more {
			w = e.newWaiter()
		}
		return err
	}
	a.placeLocal(mr.Buf(), inline)
	for _, p := range a.plan {
		if p.kind == pieceRemote {
			if inFlight == ord {
				if err := drain(true); err != nil {
					return err
				}
			}
			if tokens != nil && !tokens.TryAcquire() {
				if inFlight > 0 {
					if err := drain(true); err != nil {
						return err
					}
				}
				if err := tokens.Acquire(ctx); err != nil {
					drain(false)
					return err
				}
			}
			a.sge[0] = verbs.SGE{MR: mr, Offset: p.dstOff, Length: p.n}
			a.wr = verbs.SendWR{Op: verbs.OpRead, SGL: a.sge[:], RemoteSTag: p.seg.Handle, RemoteTO: p.seg.Offset}
			inFlight++
			if err := e.postWR(ctx, &a.wr, w); err != nil {
				if werr := drain(false); werr != nil {
					return werr
				}
				return err
			}
		}
	}
	return drain(false)
}

// rdmaWR is one RDMA Write (or Read) with its one-entry SGL, kept in a slice that is
// reused from RPC to RPC and posted as a chain (endpoint.postChain).
type rdmaWR struct {
	wr  verbs.SendWR
	sge [1]verbs.SGE
}

// appendWrites appends the RDMA Writes that put n bytes of mr, from off, into the
// segments of a peer's write chunk c, in order.
func appendWrites(wrs []rdmaWR, mr verbs.MR, off, n int, c chunks.WriteChunk) ([]rdmaWR, error) {
	for _, s := range c {
		if n == 0 {
			break
		}
		l := min(int(s.Length), n)
		if l == 0 {
			continue
		}
		wrs = append(wrs, rdmaWR{
			wr:  verbs.SendWR{Op: verbs.OpWrite, RemoteSTag: s.Handle, RemoteTO: s.Offset},
			sge: [1]verbs.SGE{{MR: mr, Offset: off, Length: l}},
		})
		off += l
		n -= l
	}
	if n > 0 {
		return wrs, fmt.Errorf("rpcrdma: %d bytes left after filling a write chunk of %d: %w", n, c.Length(), chunks.ErrTooLong)
	}
	return wrs, nil
}

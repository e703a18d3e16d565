//go:build linux

package soft

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// fusedPost is one chain of TestFusedPostWire: SGEs of a source buffer by
// (offset, length), and whether a connection of that MSS posts it fused.
type fusedPost struct {
	name string
	wrs  []verbs.SendWR // SGL filled in from sges
	sges [][][2]int
	// fused: whether the chain is one a fused post takes, with FPDUs of
	// 16 KiB and no MSS to align with, and with an MSS of 1448.
	fused, fusedMSS bool
	// anyway: the chain may or may not be fused (not checked).
	anyway bool
}

func fusedPosts() []fusedPost {
	send := verbs.SendWR{Op: verbs.OpSend, Flags: verbs.Signaled}
	write := verbs.SendWR{Op: verbs.OpWrite, Flags: verbs.Signaled, RemoteSTag: 0x4400, RemoteTO: 0x10000}
	sendInv := verbs.SendWR{Op: verbs.OpSendInv, Flags: verbs.Signaled | verbs.Solicited, InvalidateSTag: 0x1234}
	sendSE := verbs.SendWR{Op: verbs.OpSend, Flags: verbs.Signaled | verbs.Solicited}
	return []fusedPost{
		{"Send", []verbs.SendWR{send}, [][][2]int{{{0, 100}}}, true, true, false},
		{"empty Send", []verbs.SendWR{send}, [][][2]int{{{0, 0}}}, true, true, false},
		{"Send without SGEs", []verbs.SendWR{send}, [][][2]int{nil}, true, true, false},
		{"Send of three SGEs", []verbs.SendWR{send}, [][][2]int{{{7, 10}, {50, 0}, {300, 333}}}, true, true, false},
		{"Send with Invalidate and SE", []verbs.SendWR{sendInv}, [][][2]int{{{1, 50}}}, true, true, false},
		{"Send with SE", []verbs.SendWR{sendSE}, [][][2]int{{{2, 51}}}, true, true, false},
		{"Write and Send", []verbs.SendWR{write, send}, [][][2]int{{{1000, 1000}}, {{5000, 120}}}, true, true, false},
		{"Write of two SGEs and Send", []verbs.SendWR{write, send}, [][][2]int{{{1000, 600}, {3000, 3}}, {{5000, 121}}}, true, true, false},
		{"empty Write and Send", []verbs.SendWR{write, send}, [][][2]int{{{0, 0}}, {{0, 0}}}, true, true, false},
		// One FPDU of 16 KiB; cut at an MSS of 1448, so not fused there.
		{"Write of 1400 and Send", []verbs.SendWR{write, send}, [][][2]int{{{2000, 1400}}, {{6000, 64}}}, true, false, false},
		{"Send of 3000", []verbs.SendWR{send}, [][][2]int{{{0, 3000}}}, true, false, false},
		{"Write and Send leaving no room", []verbs.SendWR{write, send}, [][][2]int{{{0, 1448 - 16 - 4 - 100}}, {{9000, 174}}}, true, false, false},
		// Never fused.
		{"Write alone", []verbs.SendWR{write}, [][][2]int{{{0, 100}}}, false, false, false},
		{"Send and Send", []verbs.SendWR{send, send}, [][][2]int{{{0, 10}}, {{10, 10}}}, false, false, false},
		{"Write, Write and Send", []verbs.SendWR{write, write, send}, [][][2]int{{{0, 10}}, {{10, 10}}, {{20, 10}}}, false, false, false},
		{"Send of 70000", []verbs.SendWR{send}, [][][2]int{{{0, 70000}}}, false, false, false},
	}
}

// TestFusedPostWire checks the fused post against the general path: the same
// posts, on two connections to raw peers, one posting each chain while the
// writer is idle (fused where postFusedLocked takes it) and one while the
// transmit side is held (the writer's batch), put the same bytes on the wire
// and complete the same way; and the fused post takes exactly the chains it
// should. With and without CRC, with FPDUs of 16 KiB and no MSS to align
// them with, and with an MSS of 1448.
func TestFusedPostWire(t *testing.T) {
	for _, crc := range []bool{false, true} {
		for _, mss := range []int{0, 1448} {
			t.Run(fmt.Sprintf("crc=%v/mss=%d", crc, mss), func(t *testing.T) {
				fused, _ := fusedWire(t, crc, mss, true, fusedPosts())
				general, _ := fusedWire(t, crc, mss, false, fusedPosts())
				if !bytes.Equal(fused, general) {
					t.Fatalf("the fused posts put %d bytes on the wire, the general path %d; they differ at byte %d",
						len(fused), len(general), firstDiff(fused, general))
				}
			})
		}
	}
}

// TestFusedPostWireRandom is TestFusedPostWire over 150 chains drawn from a
// fixed seed: a Send, or an RDMA Write and a Send, of 0 to 3 SGEs each and 0
// to 2,000 bytes, Sends with or without Invalidate and SE; the two
// connections' bytes on the wire must be the same.
func TestFusedPostWireRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var posts []fusedPost
	msgs := 0
	for i := 0; i < 150; i++ {
		fp := fusedPost{name: fmt.Sprintf("random %d", i), anyway: true}
		if rng.IntN(2) == 0 {
			fp.wrs = append(fp.wrs, verbs.SendWR{Op: verbs.OpWrite, Flags: verbs.Signaled, RemoteSTag: rng.Uint32(), RemoteTO: rng.Uint64()})
		}
		send := verbs.SendWR{Op: verbs.OpSend, Flags: verbs.Signaled}
		if rng.IntN(3) == 0 {
			send.Op, send.InvalidateSTag = verbs.OpSendInv, rng.Uint32()
		}
		if rng.IntN(3) == 0 {
			send.Flags |= verbs.Solicited
		}
		fp.wrs = append(fp.wrs, send)
		for range fp.wrs {
			var sges [][2]int
			for k := rng.IntN(4); k > 0; k-- {
				sges = append(sges, [2]int{rng.IntN(70000), rng.IntN(700)})
			}
			fp.sges = append(fp.sges, sges)
		}
		posts = append(posts, fp)
		msgs += len(fp.wrs)
	}
	for _, crc := range []bool{false, true} {
		for _, mss := range []int{0, 1448} {
			t.Run(fmt.Sprintf("crc=%v/mss=%d", crc, mss), func(t *testing.T) {
				fused, n := fusedWire(t, crc, mss, true, posts)
				general, _ := fusedWire(t, crc, mss, false, posts)
				if !bytes.Equal(fused, general) {
					t.Fatalf("the fused posts put %d bytes on the wire, the general path %d; they differ at byte %d",
						len(fused), len(general), firstDiff(fused, general))
				}
				t.Logf("%d of %d messages fused", n, msgs)
				// With FPDUs of 16 KiB every chain is one a fused post
				// takes; at an MSS of 1448 the longer ones are cut.
				if n == 0 || (mss != 0 && n >= uint64(msgs)) {
					t.Errorf("%d of %d messages fused: want some of the chains fused and, at an MSS, some not", n, msgs)
				}
			})
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// fusedWire posts fusedPosts on a new connection to a raw peer (MSS clamped
// to mss; unless 0, FPDUs of 16 KiB and no alignment), each chain while the writer is idle (fuse) or while the
// transmit side is held, checks the completions and which chains were fused,
// and returns the bytes the peer received and how many messages were fused.
func fusedWire(t *testing.T, crc bool, mss int, fuse bool, posts []fusedPost) (wire []byte, fused uint64) {
	cfg := Config{SiwKick: -1}
	if mss == 0 {
		// FPDUs of a fixed size: loopback's MSS, which they otherwise
		// follow, changes as the window opens, at times that differ
		// between two connections.
		cfg.MaxFPDU = 16 << 10
	}
	s := newServerUnderTest(t, cfg)
	var p *rawPeer
	if mss == 0 {
		p = s.connectRawFirst(t, crc)
	} else {
		p, _ = s.connectMSS(t, crc, mss)
	}
	src := make([]byte, 80<<10)
	fillPattern(src, 5)
	smr := s.reg(t, src, verbs.AccessLocalWrite)

	msgs := 0
	id := uint64(0)
	for _, fp := range posts {
		wrs := append([]verbs.SendWR(nil), fp.wrs...)
		for i := range wrs {
			id++
			wrs[i].ID = id
			wrs[i].SGL = nil
			for _, sg := range fp.sges[i] {
				wrs[i].SGL = append(wrs[i].SGL, verbs.SGE{MR: smr, Offset: sg[0], Length: sg[1]})
			}
			if i > 0 {
				wrs[i-1].Next = &wrs[i]
			}
		}
		waitWriterIdle(t, s.qp)
		f0 := fusedCount(s.qp)
		release := func() {}
		if !fuse {
			release = holdTx(s.qp)
		}
		if err := s.qp.PostSend(&wrs[0]); err != nil {
			t.Fatalf("%s: %v", fp.name, err)
		}
		release()
		for _, wr := range wrs {
			op := verbs.OpcodeSend
			if wr.Op == verbs.OpWrite {
				op = verbs.OpcodeWrite
			}
			s.expect(t, wr.ID, op, verbs.StatusSuccess)
		}
		msgs += len(wrs)
		want := uint64(0)
		if fuse && ((mss == 0 && fp.fused) || (mss != 0 && fp.fusedMSS)) {
			want = uint64(len(wrs))
		}
		if got := fusedCount(s.qp) - f0; got != want && !fp.anyway {
			t.Errorf("%s: %d messages fused, want %d", fp.name, got, want)
		}
	}
	return rawMessages(t, p, msgs), fusedCount(s.qp)
}

// rawMessages reads FPDUs from p until n messages have ended and returns
// their bytes as received.
func rawMessages(t *testing.T, p *rawPeer, n int) []byte {
	t.Helper()
	var out []byte
	for n > 0 {
		var f iwarp.FPDU
		k, err := iwarp.DecodeFPDU(p.rbuf, &f, p.crc)
		if errors.Is(err, iwarp.ErrIncomplete) {
			var tmp [65536]byte
			m, err := p.c.Read(tmp[:])
			if m == 0 && err != nil {
				t.Fatalf("raw peer read: %v", err)
			}
			p.rbuf = append(p.rbuf, tmp[:m]...)
			continue
		}
		if err != nil {
			t.Fatalf("raw peer: decoding FPDU: %v", err)
		}
		if f.Header.Last {
			n--
		}
		out = append(out, p.rbuf[:k]...)
		p.rbuf = p.rbuf[k:]
	}
	return out
}

// TestFusedPostResolveError checks that a fused post whose second request
// names memory it may not use posts nothing: PostSend fails, no completion
// comes, and the next post goes out as usual.
func TestFusedPostResolveError(t *testing.T) {
	s := newServerUnderTest(t, Config{SiwKick: -1})
	p := s.connectRawFirst(t, false)
	src := make([]byte, 4096)
	smr := s.reg(t, src, verbs.AccessLocalWrite)
	waitWriterIdle(t, s.qp)
	send := verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Offset: 4000, Length: 200}}}
	write := verbs.SendWR{ID: 1, Op: verbs.OpWrite, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: 10}}, RemoteSTag: 5, Next: &send}
	if err := s.qp.PostSend(&write); !errors.Is(err, verbs.ErrInvalidWR) {
		t.Fatalf("PostSend of an SGE beyond its MR: %v, want ErrInvalidWR", err)
	}
	send.SGL[0].Offset = 0
	send.ID = 3
	if err := s.qp.PostSend(&send); err != nil {
		t.Fatal(err)
	}
	s.expect(t, 3, verbs.OpcodeSend, verbs.StatusSuccess)
	if n := fusedCount(s.qp); n != 1 {
		t.Errorf("%d messages fused, want the one Send", n)
	}
	f := p.next()
	if f.Header.Opcode != iwarp.OpSend || f.Header.MSN != 1 || len(f.Payload) != 200 {
		t.Fatalf("peer got %v MSN %d with %d bytes, want the Send, MSN 1, 200 bytes", f.Header.Opcode, f.Header.MSN, len(f.Payload))
	}
}

// TestFusedPostReusesFirstSQEntry: fused posts to an empty send queue, each
// completed before the next, all go into the ring's first entry (a ring that
// went round would touch a different line of memory for each, a cache miss
// each at many connections).
func TestFusedPostReusesFirstSQEntry(t *testing.T) {
	s := newServerUnderTest(t, Config{SiwKick: -1})
	p := s.connectRawFirst(t, false)
	src := make([]byte, 64)
	smr := s.reg(t, src, 0)
	q := s.qp.(*queuePair)
	const n = 3 * sqInitRing
	for i := range n {
		waitWriterIdle(t, s.qp)
		if err := s.qp.PostSend(&verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, SGL: []verbs.SGE{{MR: smr, Length: len(src)}}}); err != nil {
			t.Fatal(err)
		}
		s.expect(t, uint64(i), verbs.OpcodeSend, verbs.StatusSuccess)
		q.mu.Lock()
		tail := q.sqTail
		q.mu.Unlock()
		if tail != 1 {
			t.Fatalf("Send %d went into send-queue entry %d, want 0", i, tail-1)
		}
		if f := p.next(); f.Header.Opcode != iwarp.OpSend || f.Header.MSN != uint32(i+1) {
			t.Fatalf("peer got %v MSN %d, want a Send with MSN %d", f.Header.Opcode, f.Header.MSN, i+1)
		}
	}
	if got := fusedCount(s.qp); got != n {
		t.Errorf("%d of the %d Sends were fused posts", got, n)
	}
}

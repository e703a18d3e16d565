package soft

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TestHostileSTagKeysUnpredictable: the 8-bit key of an STag is not a
// function of its index (two devices give the same index different keys),
// and re-registration does not step it predictably; it never keeps the old
// key. The keys were idx*37+1, then +1 per re-registration.
func TestHostileSTagKeysUnpredictable(t *testing.T) {
	const n = 256
	keysOf := func() []uint32 {
		dev := New(Config{})
		pd, err := dev.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		stags := make([]uint32, n)
		buf := make([]byte, 16)
		for i := range stags {
			mr, err := pd.RegMR(buf, verbs.AccessRemoteWrite)
			if err != nil {
				t.Fatal(err)
			}
			defer mr.Close()
			stags[i] = mr.RKey()
			if idx := stags[i] >> 8; idx == 0 {
				t.Fatalf("STag %#x has index 0", stags[i])
			}
		}
		return stags
	}
	a, b := keysOf(), keysOf()
	same, seen := 0, map[uint8]bool{}
	for i := range a {
		if a[i]>>8 != b[i]>>8 {
			t.Fatalf("registration %d: index %d on one device, %d on the other", i, a[i]>>8, b[i]>>8)
		}
		if a[i] == b[i] {
			same++
		}
		seen[uint8(a[i])] = true
	}
	// Independent uniform keys agree about once in 256; a fixed function
	// of the index agrees every time.
	if same > n/8 {
		t.Errorf("%d of %d indices got the same key on two devices", same, n)
	}
	if len(seen) < n/4 {
		t.Errorf("only %d distinct keys over %d registrations", len(seen), n)
	}

	// Re-registration: a new key each time, never the old one, and not
	// old+1 (which a counter would give every time).
	dev := New(Config{})
	pd, _ := dev.AllocPD()
	mr, err := pd.RegMR(make([]byte, 16), verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	const rounds = 4096
	step1 := 0
	for i := 0; i < rounds; i++ {
		old := mr.RKey()
		if err := mr.Invalidate(); err != nil {
			t.Fatal(err)
		}
		if err := mr.Reregister(verbs.AccessRemoteWrite); err != nil {
			t.Fatal(err)
		}
		k := mr.RKey()
		if k>>8 != old>>8 {
			t.Fatalf("Reregister moved the index: %#x -> %#x", old, k)
		}
		if k == old {
			t.Fatalf("Reregister kept STag %#x", k)
		}
		if uint8(k) == uint8(old)+1 {
			step1++
		}
	}
	if step1 > rounds/16 {
		t.Errorf("key stepped by +1 in %d of %d re-registrations", step1, rounds)
	}

	// A closed region's index, reused, gets a different key.
	for i := 0; i < 64; i++ {
		m1, _ := pd.RegMR(make([]byte, 16), verbs.AccessRemoteWrite)
		s1 := m1.RKey()
		m1.Close()
		m2, _ := pd.RegMR(make([]byte, 16), verbs.AccessRemoteWrite)
		s2 := m2.RKey()
		m2.Close()
		if s1>>8 == s2>>8 && s1 == s2 {
			t.Fatalf("index %d reused with the same key: STag %#x", s1>>8, s1)
		}
	}
}

// TestHostileSTagStale: a peer that kept an STag from before an
// invalidation (or from a closed region) gets the invalid-STag Terminate for
// the tagged or RDMAP layer, never access to the region that replaced it.
func TestHostileSTagStale(t *testing.T) {
	type tc struct {
		name  string
		setup func(t *testing.T, s *serverUnderTest) (stale uint32, to uint64)
		read  bool // RDMA Read Request from the stale STag, else RDMA Write to it
		code  iwarp.TermCode
	}
	invalidated := func(t *testing.T, s *serverUnderTest) (uint32, uint64) {
		stag := s.mr.RKey()
		if err := s.mr.Invalidate(); err != nil {
			t.Fatal(err)
		}
		return stag, s.mr.Addr()
	}
	reregistered := func(t *testing.T, s *serverUnderTest) (uint32, uint64) {
		stag, to := invalidated(t, s)
		for i := 0; i < 3; i++ { // several generations: none revives stag
			if err := s.mr.Reregister(verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite); err != nil {
				t.Fatal(err)
			}
			if s.mr.RKey() == stag {
				t.Fatalf("Reregister gave back STag %#x", stag)
			}
			if i < 2 {
				s.mr.Invalidate()
			}
		}
		return stag, to
	}
	closedReused := func(t *testing.T, s *serverUnderTest) (uint32, uint64) {
		m, err := s.pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		stag, to := m.RKey(), m.Addr()
		m.Close()
		m2, err := s.pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m2.Close() })
		if m2.RKey()>>8 != stag>>8 || m2.RKey() == stag {
			t.Fatalf("closed STag %#x, new region %#x: want the index reused with a new key", stag, m2.RKey())
		}
		return stag, to
	}
	for _, c := range []tc{
		{"WriteInvalidated", invalidated, false, iwarp.TermDDPTaggedInvalidSTag},
		{"WriteReregistered", reregistered, false, iwarp.TermDDPTaggedInvalidSTag},
		{"WriteClosedReused", closedReused, false, iwarp.TermDDPTaggedInvalidSTag},
		{"ReadInvalidated", invalidated, true, iwarp.TermRDMAPInvalidSTag},
		{"ReadReregistered", reregistered, true, iwarp.TermRDMAPInvalidSTag},
		{"ReadClosedReused", closedReused, true, iwarp.TermRDMAPInvalidSTag},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGoroutines(t)
			s := newServerUnderTest(t, Config{})
			p := s.connectRaw(t, false, verbs.ConnParams{IRD: 4})
			stale, to := c.setup(t, s)
			if c.read {
				p.readRequest(iwarp.ReadRequest{SinkSTag: 0x1234, SinkTO: 0, Size: 8, SrcSTag: stale, SrcTO: to})
			} else {
				p.send(iwarp.Header{Opcode: iwarp.OpWrite, Last: true, STag: stale, TO: to}, []byte("overwrite"))
			}
			p.expectTerminate(c.code)
			s.checkQPFailed(t, c.code, false)
			for _, b := range s.buf {
				if b != 0 {
					t.Fatal("the stale STag reached the region")
				}
			}
		})
	}
}

// TestReregisterDoesNotAllocate: drawing random keys costs no allocation,
// including the batch refills from crypto/rand (every 256 keys).
func TestReregisterDoesNotAllocate(t *testing.T) {
	dev := New(Config{})
	pd, _ := dev.AllocPD()
	mr, err := pd.RegMR(make([]byte, 16), verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	allocs := testing.AllocsPerRun(1000, func() {
		mr.Invalidate()
		if err := mr.Reregister(verbs.AccessRemoteWrite); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Invalidate+Reregister", allocs)
	}
}

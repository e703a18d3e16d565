package soft

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TestHostileSTagKeysUnpredictable: neither part of an STag follows from
// the order of registrations (two devices give the i-th registration
// different indices and keys; indices are not consecutive), and
// re-registration does not step the key predictably; it never keeps the old
// key. STags were index<<8 | index*37+1 with indices 1, 2, 3..., and the key
// went +1 per re-registration.
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
	sameIdx, sameSTag, next, seen := 0, 0, 0, map[uint8]bool{}
	idxs := map[uint32]bool{}
	for i := range a {
		if a[i]>>8 == b[i]>>8 {
			sameIdx++
		}
		if a[i] == b[i] {
			sameSTag++
		}
		if i > 0 && a[i]>>8 == a[i-1]>>8+1 {
			next++
		}
		seen[uint8(a[i])] = true
		idxs[a[i]>>8] = true
	}
	if len(idxs) != n {
		t.Fatalf("%d distinct indices for %d live regions", len(idxs), n)
	}
	// Independent random choices agree about once in 256 (keys) or 2^24
	// (indices); a function of the registration order agrees every time.
	if sameSTag > n/8 || sameIdx > n/8 {
		t.Errorf("two devices gave registration i the same STag %d and the same index %d times of %d", sameSTag, sameIdx, n)
	}
	if next > n/8 {
		t.Errorf("index i+1 followed index i %d times of %d: sequential", next, n)
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
		// Two generations: a new key is never either of the two before it
		// (newKey), so neither revives stag. (A third may, one time in 254:
		// the key is 8 bits, as in every iWARP STag.)
		for i := 0; i < 2; i++ {
			if err := s.mr.Reregister(verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite); err != nil {
				t.Fatal(err)
			}
			if s.mr.RKey() == stag {
				t.Fatalf("Reregister gave back STag %#x", stag)
			}
			if i < 1 {
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

// TestSTagIndexPermutation: for a random key, index() stays within 24
// bits, slot() inverts it, and distinct slots get distinct indices, over
// 2^16 slots spread across the space (a Feistel network is a bijection by
// construction; this checks the code is one).
func TestSTagIndexPermutation(t *testing.T) {
	var p indexPerm
	var ks keyStream
	p.key(&ks)
	seen := make(map[uint32]uint32, 1<<16)
	for n := uint32(0); n < 1<<16; n++ {
		s := n * 0xff01 & (1<<24 - 1) // odd step: every bit pattern region
		i := p.index(s)
		if i >= 1<<24 {
			t.Fatalf("index(%#x) = %#x, beyond 24 bits", s, i)
		}
		if prev, dup := seen[i]; dup {
			t.Fatalf("index(%#x) = index(%#x) = %#x", s, prev, i)
		}
		seen[i] = s
		if back := p.slot(i); back != s {
			t.Fatalf("slot(index(%#x)) = %#x", s, back)
		}
	}
	var id indexPerm // zero value: identity
	if id.index(12345) != 12345 || id.slot(12345) != 12345 {
		t.Fatal("zero permutation is not the identity")
	}
}

// BenchmarkSTagLookup measures the per-FPDU STag lookup with the keyed
// index permutation and with the identity (what it cost before).
//
//	go test -run '^$' -bench STagLookup ./verbs/soft
func BenchmarkSTagLookup(b *testing.B) {
	for _, keyed := range []bool{true, false} {
		name := "identity"
		if keyed {
			name = "permuted"
		}
		b.Run(name, func(b *testing.B) {
			dev := New(Config{})
			if !keyed {
				dev.stags.perm = indexPerm{}
			}
			pd, _ := dev.AllocPD()
			var stags [64]uint32
			for i := range stags {
				mr, err := pd.RegMR(make([]byte, 16), verbs.AccessRemoteWrite)
				if err != nil {
					b.Fatal(err)
				}
				defer mr.Close()
				stags[i] = mr.RKey()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if dev.stags.lookup(stags[i%len(stags)]) == nil {
					b.Fatal("lookup failed")
				}
			}
		})
	}
}

// TestNewKeyAvoidsLastTwo: a new key never equals either of the index's last two
// keys (so a stale STag one or two generations old never matches), and every other
// value can come up. The stream is fed every byte value in turn, so the coverage is
// certain.
func TestNewKeyAvoidsLastTwo(t *testing.T) {
	s := keyStream{fill: func(b []byte) {
		for i := range b {
			b[i] = byte(i)
		}
	}}
	for _, cur := range []int{0, 1, 2, 127, 254, 255} {
		for _, prev := range []int{cur, (cur + 1) % 256, (cur + 77) % 256, 255 - cur} {
			seen := make(map[uint8]bool)
			for i := 0; i < 512; i++ {
				k := s.newKey(uint8(cur), uint8(prev))
				if int(k) == cur || int(k) == prev {
					t.Fatalf("newKey(%d, %d) = %d", cur, prev, k)
				}
				seen[k] = true
			}
			want := 254
			if cur == prev {
				want = 255
			}
			if len(seen) != want {
				t.Fatalf("newKey(%d, %d): %d distinct keys, want %d", cur, prev, len(seen), want)
			}
		}
	}
}

// newDevPD returns a new device and a protection domain of it, closed with the
// test.
func newDevPD(t testing.TB) (*Device, verbs.PD) {
	t.Helper()
	dev := New(Config{})
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pd.Close() })
	return dev, pd
}

// TestSTagReuseAfterRekey: a region re-keys under its own lock (the slot's last
// two keys are the region's while it holds it); closing it hands them back to the
// table, so a region that reuses the slot never gets either of the closed one's
// last two STags, whatever the re-keys in between. (A table that kept the keys of
// registration time would let the last STag come back about once in 254.)
func TestSTagReuseAfterRekey(t *testing.T) {
	_, pd := newDevPD(t)
	buf := make([]byte, 16)
	for i := 0; i < 2000; i++ {
		m1, err := pd.RegMR(buf, verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		last := [2]uint32{m1.RKey()}
		for j := 0; j <= i%3; j++ {
			if err := m1.Reregister(verbs.AccessRemoteWrite); err != nil {
				t.Fatal(err)
			}
			last[0], last[1] = m1.RKey(), last[0]
		}
		m1.Close()
		m2, err := pd.RegMR(buf, verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		if s := m2.RKey(); s>>8 != last[0]>>8 {
			t.Fatalf("round %d: STag %#x does not reuse the closed region's index (%#x)", i, s, last[0])
		} else if s == last[0] || s == last[1] {
			t.Fatalf("round %d: the reused index got back STag %#x (the closed region's last two: %#x, %#x)", i, s, last[0], last[1])
		}
		m2.Close()
	}
}

// TestSTagLookupDuringGrowth: lookups take no lock, so the table's slots are
// replaced by a longer copy as regions are added. A region stays found by its
// STag while others are registered, re-keyed and closed around it, through
// several of those copies (minSTagSlots, then doubling), and a closed one is
// not found once Close has returned.
func TestSTagLookupDuringGrowth(t *testing.T) {
	dev, pd := newDevPD(t)
	const keep = 8
	var stags [keep]uint32
	for i := range stags {
		mr, err := pd.RegMR(make([]byte, 16), verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		defer mr.Close()
		stags[i] = mr.RKey()
	}
	found := func(stag uint32) bool {
		m := dev.stags.lookup(stag)
		return m != nil && m.RKey() == stag
	}
	stop, started := make(chan struct{}), make(chan struct{})
	missed := make(chan uint32, 1)
	go func() {
		defer close(missed)
		for i := 0; ; i++ {
			if i == keep {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
			}
			if !found(stags[i%keep]) {
				missed <- stags[i%keep]
				return
			}
		}
	}()
	<-started
	var others []verbs.MR
	for i := 0; i < 8*minSTagSlots; i++ {
		mr, err := pd.RegMR(make([]byte, 16), verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		if err := mr.Reregister(verbs.AccessRemoteRead); err != nil {
			t.Fatal(err)
		}
		others = append(others, mr)
		if i%3 == 0 { // free slots get reused meanwhile
			old := others[len(others)/2]
			stag := old.RKey()
			old.Close()
			if m := dev.stags.lookup(stag); m != nil && m.RKey() == stag && m.Valid() {
				t.Fatalf("closed region's STag %#08x still finds a valid region", stag)
			}
			others = append(others[:len(others)/2], others[len(others)/2+1:]...)
		}
	}
	close(stop)
	if stag, ok := <-missed; ok {
		t.Fatalf("lookup of live STag %#08x failed while the table grew", stag)
	}
	for _, stag := range stags {
		if !found(stag) {
			t.Fatalf("live STag %#08x not found after the table grew", stag)
		}
	}
	for _, mr := range others {
		mr.Close()
	}
	if n := len(dev.stags.slots.Load().s); n <= minSTagSlots {
		t.Fatalf("table has %d slots: it never grew", n)
	}
}

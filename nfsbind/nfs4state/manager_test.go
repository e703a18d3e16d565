package nfs4state

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// Identifier counters that wrap skip 0 and the identifiers still in use.
func TestCountersWrapPastLiveIdentifiers(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	a, _ := establish(t, m, "a")
	f := FileKey{Ino: 1}
	s1 := open(t, m, a, "o1", f, nfs4.ShareAccessRead, 0)
	m.mu.Lock()
	m.nextStateid = binaryOther(s1) - 1
	m.mu.Unlock()
	s2 := open(t, m, a, "o2", f, nfs4.ShareAccessRead, 0)
	if s2.Other == s1.Other {
		t.Fatal("stateid counter reused a live stateid")
	}
	if uint32(a) != 1 {
		t.Fatalf("first client counter %d", uint32(a))
	}
	m.mu.Lock()
	m.nextClient = ^uint32(0) // next: 0 (skipped), 1 (a's, skipped), 2
	m.mu.Unlock()
	b := exchange(t, m, "b", 1)
	if uint32(b.ClientID) != 2 {
		t.Fatalf("client counter gave %x (live: %x)", b.ClientID, a)
	}
	want(t, "old stateid still good", m.CheckIO(a, s1, f, false), nfs4.OK)
}

func binaryOther(s nfs4.Stateid4) uint32 {
	return uint32(s.Other[8])<<24 | uint32(s.Other[9])<<16 | uint32(s.Other[10])<<8 | uint32(s.Other[11])
}

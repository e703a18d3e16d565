package nfs4state

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// The per-COMPOUND path of a READ or WRITE (SEQUENCE, the stateid check, caching the
// reply) does not allocate once the slot's cache buffer exists.
func TestSequenceCheckIODoneDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not checked under -race")
	}
	m := newManager(t, newClock(), Options{})
	id, sess := establish(t, m, "c1")
	f := FileKey{Ino: 1}
	sid := open(t, m, id, "o", f, nfs4.ShareAccessBoth, 0)
	reply := make([]byte, 200)
	seqid := uint32(0)
	run := func() {
		seqid++
		res, st := m.Sequence(SequenceArgs{SessionID: sess, SequenceID: seqid, CacheThis: true, Conn: 1})
		if st != nfs4.OK {
			t.Fatal(st)
		}
		if st := m.CheckIO(res.ClientID, sid, f, true); st != nfs4.OK {
			t.Fatal(st)
		}
		if st := res.Slot.Done(reply); st != nfs4.OK {
			t.Fatal(st)
		}
	}
	run()
	if a := testing.AllocsPerRun(1000, run); a > 0 {
		t.Fatalf("%.1f allocations per SEQUENCE + CheckIO + Done", a)
	}
}

// BenchmarkSequenceCheckIODone measures the state work of one READ or WRITE COMPOUND.
func BenchmarkSequenceCheckIODone(b *testing.B) {
	m := newManager(b, newClock(), Options{})
	id, sess := establish(b, m, "c1")
	f := FileKey{Ino: 1}
	sid := open(b, m, id, "o", f, nfs4.ShareAccessBoth, 0)
	reply := make([]byte, 200)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		res, st := m.Sequence(SequenceArgs{SessionID: sess, SequenceID: uint32(i + 1), CacheThis: i%2 == 0, Conn: 1})
		if st != nfs4.OK {
			b.Fatal(st)
		}
		if st := m.CheckIO(res.ClientID, sid, f, i%2 == 0); st != nfs4.OK {
			b.Fatal(st)
		}
		res.Slot.Done(reply)
	}
}

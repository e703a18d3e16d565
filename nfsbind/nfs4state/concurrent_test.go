package nfs4state

import (
	"fmt"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// Clients working in parallel (each on its own slots, files shared) leave consistent
// tables; run with -race.
func TestConcurrentClients(t *testing.T) {
	m := newManager(t, newClock(), Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte{byte(g)}, Principal: "p"})
			if st != nfs4.OK {
				errs <- fmt.Errorf("EXCHANGE_ID: %v", st)
				return
			}
			cs, st := m.CreateSession(CreateSessionArgs{ClientID: r.ClientID, SequenceID: r.SequenceID, Fore: testFore, Back: testBack, Principal: "p"})
			if st != nfs4.OK {
				errs <- fmt.Errorf("CREATE_SESSION: %v", st)
				return
			}
			for i := uint32(1); i <= 200; i++ {
				res, st := m.Sequence(SequenceArgs{SessionID: cs.SessionID, SlotID: i % 2, SequenceID: (i + 1) / 2, CacheThis: true})
				if st != nfs4.OK {
					errs <- fmt.Errorf("SEQUENCE %d: %v", i, st)
					return
				}
				f := FileKey{Ino: uint64(i % 3)}
				sid, st := m.Open(OpenArgs{ClientID: res.ClientID, Owner: []byte("o"), File: f, Access: nfs4.ShareAccessBoth})
				if st == nfs4.OK {
					ls, _, lst := m.Lock(&LockArgs{ClientID: res.ClientID, File: f, Type: nfs4.WriteLT, Offset: uint64(g) * 100, Length: 50,
						NewLockOwner: true, OpenStateid: sid, Owner: []byte("l")})
					if lst == nfs4.OK {
						m.CheckIO(res.ClientID, ls, f, true)
						m.LockU(res.ClientID, ls, f, nfs4.WriteLT, 0, toEOF)
					}
					m.Close(res.ClientID, nfs4.Stateid4{Other: sid.Other}, f)
				}
				res.Slot.Done([]byte{byte(i)})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}
	if s := m.Stats(); s.Stateids != 0 || s.Files != 0 || s.Sessions != 4 {
		t.Fatalf("stats %+v", s)
	}
}

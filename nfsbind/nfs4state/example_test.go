package nfs4state_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
)

// A client's life as the COMPOUND server drives it: EXCHANGE_ID, CREATE_SESSION, then
// COMPOUNDs that start with SEQUENCE, here one with RECLAIM_COMPLETE (which a client
// sends before its first OPEN, even with nothing to reclaim), one with OPEN and one
// with WRITE.
func Example() {
	m, err := nfs4state.New(nfs4state.Options{}) // no StateDir: no grace period
	if err != nil {
		panic(err)
	}
	ex, _ := m.ExchangeID(nfs4state.ExchangeIDArgs{OwnerID: []byte("Linux NFSv4.1 client1"), Principal: "sys:0"})
	cs, st := m.CreateSession(nfs4state.CreateSessionArgs{
		ClientID: ex.ClientID, SequenceID: ex.SequenceID, Flags: nfs4.CreateSessionFlagConnBackChan,
		Fore:      nfs4.ChannelAttrs4{MaxRequestSize: 1 << 20, MaxResponseSize: 1 << 20, MaxResponseSizeCached: 2048, MaxOperations: 16, MaxRequests: 64},
		Back:      nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1},
		Principal: "sys:0", Conn: 1,
	})
	fmt.Println("CREATE_SESSION:", st.String(), "slots:", cs.Fore.MaxRequests)

	// COMPOUND { SEQUENCE, RECLAIM_COMPLETE }
	seq, _ := m.Sequence(nfs4state.SequenceArgs{SessionID: cs.SessionID, SequenceID: 1, Conn: 1})
	fmt.Println("RECLAIM_COMPLETE:", m.ReclaimComplete(seq.ClientID, false).String())
	seq.Slot.Done([]byte("encoded COMPOUND4res"))

	file := nfs4state.FileKey{Dev: 1, Ino: 1234, Gen: 1}
	// COMPOUND { SEQUENCE, PUTFH, OPEN, GETFH }
	seq, st = m.Sequence(nfs4state.SequenceArgs{SessionID: cs.SessionID, SequenceID: 2, CacheThis: true, Conn: 1})
	fmt.Println("SEQUENCE:", st.String())
	open, st := m.Open(nfs4state.OpenArgs{ClientID: seq.ClientID, Owner: []byte("open-owner"), File: file,
		Access: nfs4.ShareAccessBoth, Deny: nfs4.ShareDenyNone, Claim: nfs4.ClaimNull})
	fmt.Println("OPEN:", st.String(), "seqid", open.Seqid)
	seq.Slot.Done([]byte("encoded COMPOUND4res"))

	// COMPOUND { SEQUENCE, PUTFH, WRITE }
	seq, _ = m.Sequence(nfs4state.SequenceArgs{SessionID: cs.SessionID, SequenceID: 3, Conn: 1})
	fmt.Println("WRITE:", m.CheckIO(seq.ClientID, open, file, true).String())
	seq.Slot.Done([]byte("encoded COMPOUND4res"))

	// A retry of the WRITE COMPOUND, whose reply was not cached (sa_cachethis false):
	// SEQUENCE succeeds, and PUTFH is answered NFS4ERR_RETRY_UNCACHED_REP.
	retry, st := m.Sequence(nfs4state.SequenceArgs{SessionID: cs.SessionID, SequenceID: 3, Conn: 1})
	fmt.Println("retry:", st.String(), "uncached:", retry.Uncached)
	// Output:
	// CREATE_SESSION: NFS4_OK slots: 64
	// RECLAIM_COMPLETE: NFS4_OK
	// SEQUENCE: NFS4_OK
	// OPEN: NFS4_OK seqid 1
	// WRITE: NFS4_OK
	// retry: NFS4_OK uncached: true
}

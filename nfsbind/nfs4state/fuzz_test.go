package nfs4state

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// fuzzDriver turns fuzz input into a sequence of Manager calls with small, colliding
// identifiers (few owners, files, slots) so that the calls meet each other's state.
type fuzzDriver struct {
	m        *Manager
	clk      *clock
	data     []byte
	clients  []uint64
	sessions []nfs4.SessionID
	stateids []nfs4.Stateid4
	slots    []Slot
	seqs     map[[2]uint64]uint32
	csSeqs   map[uint64]uint32
	maxLocks int // most locks seen held at once
}

func newFuzzDriver(m *Manager, clk *clock, data []byte) *fuzzDriver {
	return &fuzzDriver{m: m, clk: clk, data: data, seqs: make(map[[2]uint64]uint32), csSeqs: make(map[uint64]uint32)}
}

func (d *fuzzDriver) byte() byte {
	if len(d.data) == 0 {
		return 0
	}
	b := d.data[0]
	d.data = d.data[1:]
	return b
}

func (d *fuzzDriver) u64() uint64 {
	var b [8]byte
	n := copy(b[:], d.data)
	d.data = d.data[n:]
	return binary.LittleEndian.Uint64(b[:])
}

func (d *fuzzDriver) client() uint64 {
	if len(d.clients) == 0 || d.byte()%16 == 0 {
		return d.u64()
	}
	return d.clients[int(d.byte())%len(d.clients)]
}

func (d *fuzzDriver) session() nfs4.SessionID {
	if len(d.sessions) == 0 || d.byte()%16 == 0 {
		return nfs4.SessionID{d.byte()}
	}
	return d.sessions[int(d.byte())%len(d.sessions)]
}

func (d *fuzzDriver) stateid() nfs4.Stateid4 {
	switch b := d.byte(); {
	case b < 8:
		return [...]nfs4.Stateid4{AnonymousStateid, BypassStateid, CurrentStateid, InvalidStateid}[b%4]
	case len(d.stateids) > 0:
		s := d.stateids[int(b)%len(d.stateids)]
		switch d.byte() % 4 {
		case 0:
			s.Seqid = 0
		case 1:
			s.Seqid += uint32(d.byte()%3) - 1
		}
		return s
	default:
		var s nfs4.Stateid4
		s.Seqid = uint32(d.byte())
		copy(s.Other[:], d.data)
		return s
	}
}

// principal is mostly "a".
func (d *fuzzDriver) principal() string {
	if d.byte()%8 == 0 {
		return "b"
	}
	return "a"
}

func (d *fuzzDriver) file() FileKey           { return FileKey{Ino: uint64(d.byte() % 4)} }
func (d *fuzzDriver) owner() []byte           { return []byte{'o', d.byte() % 4} }
func (d *fuzzDriver) lockType() nfs4.LockType { return nfs4.LockType(d.byte() % 6) }

func (d *fuzzDriver) keep(sid nfs4.Stateid4, st nfs4.Status) {
	if st == nfs4.OK && len(d.stateids) < 64 {
		d.stateids = append(d.stateids, sid)
	}
}

func (d *fuzzDriver) step() {
	m := d.m
	switch d.byte() % 22 {
	case 0:
		r, st := m.ExchangeID(ExchangeIDArgs{OwnerID: []byte{d.byte() % 8}, Verifier: nfs4.Verifier{d.byte() % 2},
			Flags: uint32(d.byte()&1) << 30, Principal: d.principal()})
		if st == nfs4.OK && len(d.clients) < 64 {
			d.clients = append(d.clients, r.ClientID)
			d.csSeqs[r.ClientID] = r.SequenceID
		}
	case 1:
		fore := testFore
		fore.MaxRequests = uint32(d.byte())
		fore.MaxResponseSizeCached = uint32(d.byte()) * 16
		id := d.client()
		seq := d.csSeqs[id] + uint32(d.byte()%4) - 1 // mostly the expected one
		flags := d.byte()
		r, st := m.CreateSession(CreateSessionArgs{ClientID: id, SequenceID: seq, Flags: uint32(flags % 8),
			Fore: fore, Back: testBack, Principal: d.principal(), Conn: ConnID(d.byte() % 4), SecParms: secParms(flags >> 3)})
		if st == nfs4.OK && seq == d.csSeqs[id] {
			d.csSeqs[id]++
		}
		if st == nfs4.OK && len(d.sessions) < 64 {
			d.sessions = append(d.sessions, r.SessionID)
		}
	case 2:
		sid := d.session()
		slot := uint32(d.byte() % 4)
		k := [2]uint64{binary.LittleEndian.Uint64(sid[:8]), uint64(slot)}
		seq := d.seqs[k] + uint32(d.byte()%4) // mostly the next one
		if seq > d.seqs[k]+1 {
			seq = d.seqs[k] + 1
		}
		res, st := m.Sequence(SequenceArgs{SessionID: sid, SlotID: slot, HighestSlotID: slot, SequenceID: seq,
			CacheThis: d.byte()%2 == 0, Conn: ConnID(d.byte() % 4)})
		if st == nfs4.OK && res.Slot.Valid() {
			d.seqs[k] = seq
			d.slots = append(d.slots, res.Slot)
		}
	case 3:
		if len(d.slots) > 0 {
			i := int(d.byte()) % len(d.slots)
			d.slots[i].Done(make([]byte, int(d.byte())*8))
			d.slots = append(d.slots[:i], d.slots[i+1:]...)
		}
	case 4:
		m.DestroySession(d.session())
	case 5:
		m.DestroyClientID(d.client())
	case 6:
		m.BindConnToSession(d.session(), ConnID(d.byte()%8), nfs4.ChannelDirFromClient(d.byte()%8))
	case 7:
		m.ReclaimComplete(d.client(), d.byte()%2 == 0)
	case 8:
		// The deny byte's high bit takes the OPEN back (UndoOpen), as a server does
		// when what follows the share reservation fails.
		id, owner, file, access, deny := d.client(), d.owner(), d.file(), d.byte(), d.byte()
		sid, u, st := m.OpenUndoable(OpenArgs{ClientID: id, Owner: owner, File: file, Access: uint32(access % 5),
			Deny: uint32(deny % 5), Claim: nfs4.ClaimType(d.byte() % 8)})
		if st == nfs4.OK && deny&0x80 != 0 {
			m.UndoOpen(u)
		}
		d.keep(sid, st)
	case 9:
		sid, st := m.OpenDowngrade(d.client(), d.stateid(), d.file(), uint32(d.byte()%4), uint32(d.byte()%4))
		d.keep(sid, st)
	case 10:
		m.Close(d.client(), d.stateid(), d.file())
	case 11:
		sid, _, st := m.Lock(&LockArgs{ClientID: d.client(), File: d.file(), Type: d.lockType(), Reclaim: d.byte()%8 == 0,
			Offset: uint64(d.byte()), Length: d.length(), NewLockOwner: d.byte()%2 == 0, OpenStateid: d.stateid(),
			Owner: d.owner(), LockStateid: d.stateid()})
		d.keep(sid, st)
	case 12:
		m.LockT(d.client(), d.file(), d.lockType(), uint64(d.byte()), d.length(), d.owner())
	case 13:
		sid, st := m.LockU(d.client(), d.stateid(), d.file(), d.lockType(), uint64(d.byte()), d.length())
		d.keep(sid, st)
	case 14:
		out := make([]nfs4.Status, 3)
		m.TestStateid(d.client(), []nfs4.Stateid4{d.stateid(), d.stateid(), d.stateid()}, out)
	case 15:
		m.FreeStateid(d.client(), d.stateid())
	case 16:
		m.CheckIO(d.client(), d.stateid(), d.file(), d.byte()%2 == 0)
	case 17:
		d.clk.advance(time.Duration(d.byte()) * time.Second)
		m.Sweep(d.clk.now())
	case 18:
		m.ConnClosed(ConnID(d.byte() % 8))
	case 19:
		b := d.byte()
		if b>>1%4 != 0 {
			m.SetCallbackPath(d.client(), b%2 == 0)
			break
		}
		sec := secParms(b >> 3)
		sid := d.session()
		m.BackchannelCtl(sid, uint32(b), sec)
		if len(sec) > 0 && sec[0].Flavor == nfs4.AuthSys && len(sec[0].Sys.MachineName) > 0 {
			sec[0].Sys.MachineName[0] ^= 0xff // the caller's buffer is reused
		}
		if bc, st := m.Backchannel(sid); st == nfs4.OK && len(bc.SecParms) > nfs4.MaxSecFlavors {
			panic(fmt.Sprintf("%d callback security parameters kept", len(bc.SecParms)))
		}
	case 20:
		m.RevokeClient(d.client())
	case 21:
		m.RevokeFile(d.file())
	}
}

// secParms returns one of 32 lists of callback security parameters, chosen by k: 0,
// 6, 12 or 18 entries (more than nfs4.MaxSecFlavors) of AUTH_NONE, AUTH_SYS (machine
// names up to 299 bytes, up to nfs4.MaxGIDs+2 gids) and RPCSEC_GSS with handles. It
// reads no input, so the seeds' paths do not depend on it.
func secParms(k byte) []nfs4.CallbackSecParms4 {
	p := make([]nfs4.CallbackSecParms4, int(k%4)*6)
	for i := range p {
		v := int(k) + i
		switch v % 3 {
		case 0:
			p[i].Flavor = nfs4.AuthNone
		case 1:
			p[i].Flavor = nfs4.AuthSys
			p[i].Sys = nfs4.AuthSysParms{Stamp: uint32(v), MachineName: make([]byte, (v*53)%300),
				UID: uint32(v), GIDs: make([]uint32, v%(nfs4.MaxGIDs+3))}
		default:
			p[i].Flavor = nfs4.RPCSecGSS
			p[i].GSS = nfs4.GSSCBHandles{Service: uint32(v), HandleFromServer: make([]byte, v%50+1)}
		}
	}
	return p
}

func (d *fuzzDriver) length() uint64 {
	switch b := d.byte(); b % 4 {
	case 0:
		return toEOF
	case 1:
		return toEOF - uint64(d.byte())
	default:
		return uint64(b)
	}
}

// fuzzManagerSeeds are scripts for fuzzDriver: two clients with sessions that send
// RECLAIM_COMPLETE, opens of one file, a lock, a conflicting lock (denied), a lock beside
// it, LOCKU splitting the first, LOCKT, READ, SEQUENCE with a cached reply and its retry,
// and the leases' expiry.
var fuzzManagerSeeds = [][]byte{
	cat(
		[]byte{0, 0, 1, 0, 1}, []byte{1, 4, 16, 1, 0, 1, 2, 1, 0}, []byte{7, 1, 0, 1}, []byte{8, 1, 0, 0, 0, 3, 0, 0},
		[]byte{11, 1, 0, 0, 2, 1, 10, 6, 0, 8, 2, 0, 8, 2},
		[]byte{0, 1, 1, 0, 1}, []byte{1, 4, 16, 1, 1, 1, 2, 1, 1}, []byte{7, 1, 1, 1}, []byte{8, 1, 1, 1, 0, 3, 0, 0},
		[]byte{11, 1, 1, 0, 1, 1, 12, 6, 0, 11, 2, 1, 11, 2},
		[]byte{11, 1, 1, 0, 1, 1, 100, 6, 0, 11, 2, 1, 11, 2},
		[]byte{13, 1, 0, 9, 0, 0, 2, 12, 2},
		[]byte{12, 1, 1, 0, 2, 0, 0, 1},
		[]byte{16, 1, 0, 8, 2, 0, 0},
		[]byte{2, 1, 0, 0, 1, 0, 0}, []byte{3, 0, 4}, []byte{2, 1, 0, 0, 0, 0, 0},
		[]byte{17, 200},
	),
}

func init() {
	// The same, but revoking client a's state and b's file, then freeing a stateid.
	s := fuzzManagerSeeds[0]
	fuzzManagerSeeds = append(fuzzManagerSeeds, cat(s[:len(s)-2], []byte{20, 1, 0}, []byte{21, 0}, []byte{15, 1, 0, 8, 2}, []byte{17, 200}))
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// TestFuzzManagerSeedsReachLocks keeps the fuzz seeds meaningful: they must get as far as
// holding locks of two clients.
func TestFuzzManagerSeedsReachLocks(t *testing.T) {
	if n := runFuzzManager(t, fuzzManagerSeeds[0]); n < 3 {
		t.Fatalf("seed held at most %d locks at once, want 3 or more", n)
	}
}

// FuzzManager drives random sequences of operations against a Manager with small bounds
// and checks after every step that nothing panicked and every table is consistent and
// within its bound.
func FuzzManager(f *testing.F) {
	for _, seed := range fuzzManagerSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runFuzzManager(t, data) })
}

// runFuzzManager is FuzzManager's body; it returns the most locks held at once.
func runFuzzManager(t *testing.T, data []byte) int {
	clk := newClock()
	m, err := New(Options{Now: clk.now, LeaseTime: 100 * time.Second, MaxClients: 6, MaxSessionsPerClient: 2,
		MaxSlots: 4, MaxCachedReply: 512, MaxReplyCacheBytes: 4096, MaxConnsPerSession: 2,
		MaxStateOwnersPerClient: 4, MaxStateidsPerClient: 6, MaxStateids: 16, MaxLocksPerOwner: 4})
	if err != nil {
		t.Fatal(err)
	}
	d := newFuzzDriver(m, clk, data)
	for i := 0; len(d.data) > 0 && i < 2000; i++ {
		d.step()
		if err := checkInvariants(m); err != nil {
			t.Fatalf("after step %d: %v", i, err)
		}
		d.maxLocks = max(d.maxLocks, m.Stats().Locks)
	}
	for _, s := range d.slots {
		s.Done(nil)
	}
	clk.advance(time.Hour)
	m.Sweep(clk.now())
	if s := m.Stats(); s.Clients != 0 || s.Stateids != 0 || s.Files != 0 || s.Sessions != 0 || s.ReplyCacheBytes != 0 {
		t.Fatalf("state left after every lease expired: %+v", s)
	}
	return d.maxLocks
}

// FuzzStateFile feeds arbitrary bytes to the state file parser; whatever it accepts must
// survive a format/parse round trip.
func FuzzStateFile(f *testing.F) {
	f.Add([]byte("nfs4state 1\nepoch 1764175545\nclient 616c706861\nclient 00ff\n"))
	f.Add([]byte("nfs4state 1\n"))
	f.Add([]byte("nfs4state 2\nepoch 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := parseStateFile(data)
		if err != nil {
			return
		}
		again, err := parseStateFile(formatStateFile(&rec))
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		if again.epoch != rec.epoch || len(again.owners) != len(rec.owners) {
			t.Fatalf("round trip: %+v then %+v", rec, again)
		}
		for i := range rec.owners {
			if again.owners[i] != rec.owners[i] {
				t.Fatalf("owner %d: %q then %q", i, rec.owners[i], again.owners[i])
			}
		}
	})
}

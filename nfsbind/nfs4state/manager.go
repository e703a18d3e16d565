package nfs4state

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// Manager holds the NFSv4.1 state of one server instance: client records, sessions and
// their slot tables, open and lock stateids, share reservations, byte-range locks, leases
// and the grace period. Its methods are safe for concurrent use; each takes one lock for
// a short, bounded amount of work and never blocks on I/O, except that the client list
// in Options.StateDir is rewritten (outside that lock) when a client is confirmed or
// removed.
type Manager struct {
	mu   sync.Mutex
	opts Options

	// epoch is this instance's boot epoch: the high half of every client ID and the first
	// four bytes of every session ID and stateid "other", so that identifiers of a
	// previous instance are recognised as stale.
	epoch uint32

	nextClient  uint32
	nextSession uint32
	nextStateid uint32

	clients     map[uint64]*client // every record, by client ID
	confirmed   map[string]*client // by co_ownerid
	unconfirmed map[string]*client // by co_ownerid
	sessions    map[nfs4.SessionID]*session
	stateids    map[[nfs4.OtherSize]byte]*stateid
	files       map[FileKey]*file

	// expired remembers, bounded, the client counters whose leases expired, so their
	// stateids get NFS4ERR_EXPIRED rather than NFS4ERR_BAD_STATEID.
	expired     map[uint32]struct{}
	expiredFIFO []uint32

	cacheBytes int64 // reply cache reserved by all sessions

	grace graceState
	store *store // nil without Options.StateDir
}

// New returns a Manager for a server instance starting now: the grace period begins, and
// with Options.StateDir the previous instance's clients are read from (and this
// instance's epoch written to) the state file. An error means the state file could not
// be read or written.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	m := &Manager{
		opts:        opts,
		clients:     make(map[uint64]*client),
		confirmed:   make(map[string]*client),
		unconfirmed: make(map[string]*client),
		sessions:    make(map[nfs4.SessionID]*session),
		stateids:    make(map[[nfs4.OtherSize]byte]*stateid),
		files:       make(map[FileKey]*file),
		expired:     make(map[uint32]struct{}),
	}
	now := opts.Now()
	// Without a state file the epoch is random, so that two instances started within the
	// same second still tell each other's identifiers apart; with one it is the time, or
	// one more than the last instance's if the clock went back.
	m.epoch = randomUint32()
	var prev []string
	if opts.StateDir != "" {
		st, err := openStore(opts.StateDir)
		if err != nil {
			return nil, err
		}
		m.store = st
		rec, err := st.load()
		if err != nil {
			return nil, err
		}
		m.epoch = uint32(now.Unix())
		if rec.epoch >= m.epoch {
			m.epoch = rec.epoch + 1
		}
		prev = rec.owners
	}
	if m.epoch == 0 {
		m.epoch = 1
	}
	m.grace.start(now, opts.GraceTime, prev)
	if len(prev) > 0 {
		opts.Logger.Info("nfs4 grace period started", "reclaimers", len(prev), "grace", opts.GraceTime)
	}
	if m.store != nil {
		if err := m.store.write(m.snapshotLocked()); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func randomUint32() uint32 {
	var b [4]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return binary.BigEndian.Uint32(b[:])
}

// Epoch returns this instance's boot epoch.
func (m *Manager) Epoch() uint32 { return m.epoch }

// LeaseTime returns the lease period (for fattr4 lease_time).
func (m *Manager) LeaseTime() time.Duration { return m.opts.LeaseTime }

// Limits returns the options in effect, defaults filled in.
func (m *Manager) Limits() Options { return m.opts }

func (m *Manager) now() time.Time { return m.opts.Now() }

// clientIDOf builds a client ID from this epoch and a counter.
func (m *Manager) clientIDOf(counter uint32) uint64 { return uint64(m.epoch)<<32 | uint64(counter) }

func (m *Manager) newOther(c *client) [nfs4.OtherSize]byte {
	var o [nfs4.OtherSize]byte
	binary.BigEndian.PutUint32(o[0:4], m.epoch)
	binary.BigEndian.PutUint32(o[4:8], uint32(c.id))
	for {
		// After 2^32 stateids the counter wraps; skip 0 and those still in use (the
		// table is bounded, so this ends).
		m.nextStateid++
		if m.nextStateid == 0 {
			continue
		}
		binary.BigEndian.PutUint32(o[8:12], m.nextStateid)
		if _, used := m.stateids[o]; !used {
			return o
		}
	}
}

// newClientID returns an unused client ID of this epoch.
func (m *Manager) newClientID() uint64 {
	for {
		m.nextClient++
		if m.nextClient == 0 {
			continue
		}
		id := m.clientIDOf(m.nextClient)
		if _, used := m.clients[id]; !used {
			return id
		}
	}
}

// rememberExpired records that a client's lease expired, forgetting the oldest record
// beyond MaxClients entries.
func (m *Manager) rememberExpired(id uint64) {
	k := uint32(id)
	if _, ok := m.expired[k]; ok {
		return
	}
	if len(m.expiredFIFO) >= m.opts.MaxClients {
		delete(m.expired, m.expiredFIFO[0])
		m.expiredFIFO = append(m.expiredFIFO[:0], m.expiredFIFO[1:]...)
	}
	m.expired[k] = struct{}{}
	m.expiredFIFO = append(m.expiredFIFO, k)
}

// Stats counts the entries of the Manager's tables.
type Stats struct {
	Clients, ConfirmedClients, Sessions, Stateids, Files, StateOwners, Locks int
	ReplyCacheBytes                                                          int64
	InGrace                                                                  bool
}

// Stats returns the sizes of the Manager's tables.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{
		Clients:          len(m.clients),
		ConfirmedClients: len(m.confirmed),
		Sessions:         len(m.sessions),
		Stateids:         len(m.stateids),
		Files:            len(m.files),
		ReplyCacheBytes:  m.cacheBytes,
		InGrace:          m.inGraceLocked(m.now()),
	}
	for _, c := range m.clients {
		s.StateOwners += len(c.openOwners) + len(c.lockOwners)
		for _, o := range c.lockOwners {
			s.Locks += o.nlocks
		}
	}
	return s
}

package nfs4state

import (
	"time"

	"github.com/hashicorp/go-hclog"
)

// Options configures a Manager. The zero value of every field picks the default named in
// its comment; the bounds exist because every size a client names is untrusted.
type Options struct {
	// LeaseTime is the lease period (fattr4 lease_time): a client that sends no SEQUENCE for
	// this long loses its state at the next Sweep. Default 90 s.
	LeaseTime time.Duration
	// GraceTime is how long after New only reclaims are allowed (RFC 8881 §8.4.2.1), unless
	// every client of the previous instance has sent RECLAIM_COMPLETE first. Default LeaseTime.
	GraceTime time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// StateDir, when set, is the directory holding the file that lists the confirmed client
	// owners and the boot epoch, so a restarted server knows who may reclaim. Without it
	// nobody may reclaim and the grace period ends at once.
	StateDir string
	// Logger receives client and grace events. Default: discard.
	Logger hclog.Logger

	// MaxClients bounds client records, confirmed and unconfirmed. Default 1024.
	MaxClients int
	// MaxSessionsPerClient bounds the sessions of one client. Default 8.
	MaxSessionsPerClient int
	// MaxSlots bounds a session's fore-channel slot table (ca_maxrequests). Default 64.
	MaxSlots int
	// MaxCachedReply bounds one slot's cached reply (ca_maxresponsesize_cached). Default 8 KiB.
	MaxCachedReply int
	// MaxReplyCacheBytes bounds the sum over all sessions of slots × cached reply size; a
	// session that would exceed it gets fewer slots, or NFS4ERR_DELAY if not even one fits.
	// Default 64 MiB.
	MaxReplyCacheBytes int64
	// MaxRequestSize and MaxResponseSize are the server's limits on a fore-channel COMPOUND
	// (ca_maxrequestsize, ca_maxresponsesize). Default 1 MiB + 64 KiB each.
	MaxRequestSize, MaxResponseSize uint32
	// MaxOperations bounds the operations in one COMPOUND (ca_maxoperations). Default 64.
	MaxOperations uint32
	// MaxConnsPerSession bounds the connections bound to one session; binding one more
	// unbinds the oldest. Default 16.
	MaxConnsPerSession int
	// MaxStateOwnersPerClient bounds a client's open-owners plus lock-owners. Default 4096.
	MaxStateOwnersPerClient int
	// MaxStateidsPerClient bounds a client's open and lock stateids. Default 16384.
	MaxStateidsPerClient int
	// MaxStateids bounds the open and lock stateids of all clients. Default 262144.
	MaxStateids int
	// MaxLocksPerOwner bounds the byte ranges one lock-owner holds, over all files. Default 1024.
	MaxLocksPerOwner int
}

// Defaults.
const (
	DefaultLeaseTime               = 90 * time.Second
	DefaultMaxClients              = 1024
	DefaultMaxSessionsPerClient    = 8
	DefaultMaxSlots                = 64
	DefaultMaxCachedReply          = 8 << 10
	DefaultMaxReplyCacheBytes      = 64 << 20
	DefaultMaxMessageSize          = 1<<20 + 64<<10
	DefaultMaxOperations           = 64
	DefaultMaxConnsPerSession      = 16
	DefaultMaxStateOwnersPerClient = 4096
	DefaultMaxStateidsPerClient    = 16384
	DefaultMaxStateids             = 1 << 18
	DefaultMaxLocksPerOwner        = 1024
)

func (o Options) withDefaults() Options {
	if o.LeaseTime <= 0 {
		o.LeaseTime = DefaultLeaseTime
	}
	if o.GraceTime <= 0 {
		o.GraceTime = o.LeaseTime
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	setInt(&o.MaxClients, DefaultMaxClients)
	setInt(&o.MaxSessionsPerClient, DefaultMaxSessionsPerClient)
	setInt(&o.MaxSlots, DefaultMaxSlots)
	setInt(&o.MaxCachedReply, DefaultMaxCachedReply)
	if o.MaxReplyCacheBytes <= 0 {
		o.MaxReplyCacheBytes = DefaultMaxReplyCacheBytes
	}
	if o.MaxRequestSize == 0 {
		o.MaxRequestSize = DefaultMaxMessageSize
	}
	if o.MaxResponseSize == 0 {
		o.MaxResponseSize = DefaultMaxMessageSize
	}
	if o.MaxOperations == 0 {
		o.MaxOperations = DefaultMaxOperations
	}
	setInt(&o.MaxConnsPerSession, DefaultMaxConnsPerSession)
	setInt(&o.MaxStateOwnersPerClient, DefaultMaxStateOwnersPerClient)
	setInt(&o.MaxStateidsPerClient, DefaultMaxStateidsPerClient)
	setInt(&o.MaxStateids, DefaultMaxStateids)
	setInt(&o.MaxLocksPerOwner, DefaultMaxLocksPerOwner)
	return o
}

func setInt(p *int, def int) {
	if *p <= 0 {
		*p = def
	}
}

//go:build linux

package nfsserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// Callback path probes.
//
// When a session gets a back channel (CREATE_SESSION granting CONN_BACK_CHAN,
// BIND_CONN_TO_SESSION binding a connection to it, or BACKCHANNEL_CTL naming another
// callback program) on a connection that can carry
// reverse-direction calls (oncrpc.BackchannelConn), the server probes it as RFC 8881
// §2.10.3.1 and Linux nfsd do: CB_NULL, then a CB_COMPOUND holding CB_SEQUENCE on the
// back channel's slot 0. The result goes to the state manager, which reports
// SEQ4_STATUS_CB_PATH_DOWN in every SEQUENCE reply while the last probe failed. A
// connection that cannot carry reverse calls (oncrpc.ErrNoBackchannel) is not
// probed and not reported down: this server grants no delegations, so nothing it does
// waits on callbacks. One probe per session runs at a time, each bounded by
// probeTimeout; Close cancels and waits for them.
//
// Callbacks carry the credential the client asked for in the session's security
// parameters (CREATE_SESSION's csa_sec_parms, replaced by BACKCHANNEL_CTL's
// bca_sec_parms; RFC 8881 §2.10.8.3, §18.36.3): the first entry of a flavor this server
// can send, AUTH_SYS (with the client's stamp, machine name, uid, gid and gids) or
// AUTH_NONE. Linux's callback service refuses a CB_COMPOUND with AUTH_NONE. When no
// entry can be used (RPCSEC_GSS only, or none), the back channel is unusable: it is
// reported down and not probed. A CB_SEQUENCE answered NFS4ERR_DELAY (Linux's
// client drains its session around CREATE_SESSION, so the first probe may meet it) is
// sent again a little later (probeDelayRetry) before the probe counts as failed.
//
// A failed probe is not repeated before a back-off (probeBackoffMin, doubling up to
// probeBackoffMax; reset by a good probe and by BACKCHANNEL_CTL's new parameters):
// a client that answers SEQ4_STATUS_CB_PATH_DOWN with BIND_CONN_TO_SESSION, as Linux
// does, would otherwise have the server probe again at once, in a loop. The path stays
// reported down meanwhile. The back-off reads the state manager's clock.

// probeTimeout bounds one callback probe.
const probeTimeout = 10 * time.Second

// A CB_COMPOUND answered NFS4ERR_DELAY is sent again after probeDelayRetry (the
// default of cbProbes.retry), at most maxDelayRetries times, within probeTimeout.
const (
	probeDelayRetry = 500 * time.Millisecond
	maxDelayRetries = 10
)

// The back-off after failed probes: probeBackoffMin after the first failure, doubling
// with each further one, at most probeBackoffMax.
const (
	probeBackoffMin = time.Second
	probeBackoffMax = 30 * time.Second
)

// maxProbedSessions bounds the probe state table; past it the entries of sessions not
// being probed are dropped (a session probed again starts over at sequence ID 1, which
// its client answers with NFS4ERR_SEQ_MISORDERED at worst: the path is then reported
// down until a later probe, and without a back-off).
const maxProbedSessions = 4096

// cbProbes is the state of the callback probes of a v4Server.
type cbProbes struct {
	mu       sync.Mutex
	sessions map[nfs4.SessionID]*probeState
	running  int           // probes running
	idle     sync.Cond     // signalled when running drops to 0; L is &mu
	started  int           // probes started, for tests
	retry    time.Duration // wait before resending a CB_COMPOUND answered NFS4ERR_DELAY
}

// probeState is the probe state of one session.
type probeState struct {
	seq      uint32    // the last CB_SEQUENCE sequence ID the client's slot 0 took
	busy     bool      // a probe runs
	failures int       // failed probes in a row
	retryAt  time.Time // no probe before this, after a failure
}

// init readies p for use.
func (p *cbProbes) init() {
	p.sessions = map[nfs4.SessionID]*probeState{}
	p.idle.L = &p.mu
	p.retry = probeDelayRetry
}

// session returns the probe state of sid, creating it. p.mu is held.
func (p *cbProbes) session(sid nfs4.SessionID) *probeState {
	if ps := p.sessions[sid]; ps != nil {
		return ps
	}
	if len(p.sessions) >= maxProbedSessions {
		for id, ps := range p.sessions {
			if !ps.busy {
				delete(p.sessions, id)
			}
		}
	}
	ps := &probeState{}
	p.sessions[sid] = ps
	return ps
}

// failed records a failed probe at now: the next one waits for the back-off.
func (ps *probeState) failed(now time.Time) {
	ps.failures++
	d := probeBackoffMax
	if ps.failures <= 5 { // 1 s << 5 = 32 s > probeBackoffMax
		d = min(probeBackoffMin<<(ps.failures-1), probeBackoffMax)
	}
	ps.retryAt = now.Add(d)
}

// succeeded records a good probe: the back-off is over.
func (ps *probeState) succeeded() { ps.failures, ps.retryAt = 0, time.Time{} }

// probe starts a probe of the back channel of session sid on conn, if conn can
// carry reverse calls, no probe of sid is running and the back-off after a failed
// one is over. renewed (BACKCHANNEL_CTL) ends the back-off first: the parameters are
// new.
func (v *v4Server) probe(conn oncrpc.ServerConn, sid nfs4.SessionID, renewed bool) {
	bc, ok := conn.(oncrpc.BackchannelConn)
	if !ok {
		return
	}
	rt, err := bc.Backchannel()
	if err != nil {
		if !errors.Is(err, oncrpc.ErrNoBackchannel) {
			v.log.Debug("no back channel", "error", err)
		}
		return
	}
	b, st := v.state.Backchannel(sid)
	if st != nfs4.OK {
		return
	}
	now := v.now()
	p := &v.cb
	p.mu.Lock()
	if v.ctx.Err() != nil {
		p.mu.Unlock()
		return
	}
	ps := p.session(sid)
	if renewed {
		ps.succeeded()
	}
	if ps.busy || now.Before(ps.retryAt) {
		p.mu.Unlock()
		return
	}
	cred, ok := callbackCred(b.SecParms)
	if !ok {
		ps.failed(now)
		p.mu.Unlock()
		v.state.SetCallbackPath(b.ClientID, false)
		v.log.Info("callback path down", "client", b.ClientID,
			"error", "no AUTH_SYS or AUTH_NONE among the callback security parameters")
		return
	}
	ps.busy = true
	seq := ps.seq + 1
	retry := p.retry
	p.running++
	p.started++
	p.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(v.ctx, probeTimeout)
		taken, err := cbProbe(ctx, rt, b.CBProgram, cred, sid, seq, retry)
		cancel()
		v.state.SetCallbackPath(b.ClientID, err == nil)
		if err != nil {
			v.log.Info("callback path down", "client", b.ClientID, "error", err)
		} else {
			v.log.Info("callback path up", "client", b.ClientID, "flavor", cred.Flavor)
		}
		p.mu.Lock()
		ps.busy = false
		if taken {
			ps.seq = seq
		}
		if err != nil {
			ps.failed(v.now())
		} else {
			ps.succeeded()
		}
		if p.running--; p.running == 0 {
			p.idle.Broadcast()
		}
		p.mu.Unlock()
	}()
}

// wait waits until no probe runs.
func (p *cbProbes) wait() {
	p.mu.Lock()
	for p.running > 0 {
		p.idle.Wait()
	}
	p.mu.Unlock()
}

// forget drops the probe state of a destroyed session.
func (p *cbProbes) forget(sid nfs4.SessionID) {
	p.mu.Lock()
	delete(p.sessions, sid)
	p.mu.Unlock()
}

// callbackCred returns the credential of the callbacks for the client's security
// parameters: that of the first entry with a flavor this server can send (AUTH_SYS or
// AUTH_NONE), or false when there is none.
func callbackCred(sec []nfs4.CallbackSecParms4) (oncrpc.OpaqueAuth, bool) {
	for i := range sec {
		switch sec[i].Flavor {
		case nfs4.AuthNone:
			return oncrpc.OpaqueAuth{Flavor: oncrpc.AuthNone}, true
		case nfs4.AuthSys:
			s := &sec[i].Sys
			cred, err := oncrpc.NewAuthSys(&oncrpc.AuthSysParams{Stamp: s.Stamp, MachineName: s.MachineName,
				UID: s.UID, GID: s.GID, GIDs: s.GIDs})
			if err == nil { // the decoder's bounds are AUTH_SYS's: it always fits
				return cred, true
			}
		}
	}
	return oncrpc.OpaqueAuth{}, false
}

// cbProbe sends CB_NULL and CB_COMPOUND{CB_SEQUENCE} with sequence ID seq to program
// prog over rt, with credential cred. A CB_SEQUENCE answered NFS4ERR_DELAY (Linux's
// answer while its client drains the session's slot tables, as it does around
// EXCHANGE_ID and CREATE_SESSION, so to a probe right after CREATE_SESSION) is sent
// again after retry, at most maxDelayRetries times. taken reports whether the
// client's slot 0 took seq (CB_SEQUENCE answered, OK or as a retry of seq), so the next
// probe sends seq+1.
func cbProbe(ctx context.Context, rt oncrpc.RoundTripper, prog uint32, cred oncrpc.OpaqueAuth,
	sid nfs4.SessionID, seq uint32, retry time.Duration) (taken bool, err error) {
	cl := oncrpc.NewClient(rt, prog, nfs4.CBVersion, oncrpc.WithAuth(cred))
	if err := cl.Call(ctx, nfs4.CBProcNull, nil, nil); err != nil {
		return false, fmt.Errorf("CB_NULL: %w", err)
	}
	args := nfs4.CBCompoundArgs{MinorVersion: nfs4.MinorVersion, Ops: []nfs4.CBOpArgs{
		&nfs4.CBSequenceArgs{SessionID: sid, SequenceID: seq}}}
	for try := 0; ; try++ {
		var res nfs4.CBCompoundRes
		if err := cl.Call(ctx, nfs4.CBProcCompound, &args, &res); err != nil {
			return false, fmt.Errorf("CB_COMPOUND: %w", err)
		}
		st := res.Status
		if len(res.Results) > 0 {
			if r, ok := res.Results[0].(*nfs4.CBSequenceRes); ok {
				st = r.Status
			}
		}
		if st == nfs4.ErrDelay && try < maxDelayRetries {
			t := time.NewTimer(retry)
			select {
			case <-ctx.Done():
				t.Stop()
				return false, fmt.Errorf("CB_COMPOUND: %v, then %w", st, ctx.Err())
			case <-t.C:
			}
			continue
		}
		taken = len(res.Results) > 0 && (st == nfs4.OK || st == nfs4.ErrRetryUncachedRep)
		if res.Status != nfs4.OK {
			return taken, fmt.Errorf("CB_COMPOUND: %v", res.Status)
		}
		return taken, nil
	}
}

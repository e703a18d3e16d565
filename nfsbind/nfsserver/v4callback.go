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

// probeTimeout bounds one callback probe.
const probeTimeout = 10 * time.Second

// maxProbedSessions bounds the back-channel sequence table; past it the table is
// emptied (a session probed again starts over at sequence ID 1, which its client
// answers with NFS4ERR_SEQ_MISORDERED at worst: the path is then reported down until a
// later probe).
const maxProbedSessions = 4096

// cbProbes is the state of the callback probes of a v4Server.
type cbProbes struct {
	mu      sync.Mutex
	seq     map[nfs4.SessionID]uint32 // last CB_SEQUENCE sequence ID sent, per session
	busy    map[nfs4.SessionID]bool   // sessions being probed
	running int                       // probes running
	idle    sync.Cond                 // signalled when running drops to 0; L is &mu
}

// probe starts a probe of the back channel of session sid on conn, if conn can
// carry reverse calls and no probe of sid is running.
func (v *v4Server) probe(conn oncrpc.ServerConn, sid nfs4.SessionID) {
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
	p := &v.cb
	p.mu.Lock()
	if p.busy[sid] || v.ctx.Err() != nil {
		p.mu.Unlock()
		return
	}
	if len(p.seq) >= maxProbedSessions {
		clear(p.seq)
	}
	p.busy[sid] = true
	p.seq[sid]++
	seq := p.seq[sid]
	p.running++
	p.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(v.ctx, probeTimeout)
		err := cbProbe(ctx, rt, b.CBProgram, sid, seq)
		cancel()
		v.state.SetCallbackPath(b.ClientID, err == nil)
		if err != nil {
			v.log.Info("callback path down", "client", b.ClientID, "error", err)
		} else {
			v.log.Debug("callback path up", "client", b.ClientID)
		}
		p.mu.Lock()
		delete(p.busy, sid)
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
	delete(p.seq, sid)
	p.mu.Unlock()
}

// cbProbe sends CB_NULL and CB_COMPOUND{CB_SEQUENCE} to program prog over rt.
func cbProbe(ctx context.Context, rt oncrpc.RoundTripper, prog uint32, sid nfs4.SessionID, seq uint32) error {
	cl := oncrpc.NewClient(rt, prog, nfs4.CBVersion)
	if err := cl.Call(ctx, nfs4.CBProcNull, nil, nil); err != nil {
		return fmt.Errorf("CB_NULL: %w", err)
	}
	args := nfs4.CBCompoundArgs{MinorVersion: nfs4.MinorVersion, Ops: []nfs4.CBOpArgs{
		&nfs4.CBSequenceArgs{SessionID: sid, SequenceID: seq}}}
	var res nfs4.CBCompoundRes
	if err := cl.Call(ctx, nfs4.CBProcCompound, &args, &res); err != nil {
		return fmt.Errorf("CB_COMPOUND: %w", err)
	}
	if res.Status != nfs4.OK {
		return fmt.Errorf("CB_COMPOUND: %v", res.Status)
	}
	return nil
}

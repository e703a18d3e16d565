//go:build ibverbs && linux && cgo

package ibverbs

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// fakeConnRequest is the ConnRequest the listener makes of a connection
// request from a peer with IRD peerIRD and ORD peerORD, on an InfiniBand or
// iWARP fake device. rdma_cm reports the request from the receiver's side
// (rdma_get_cm_event(3)): responder_resources is the responder resources it
// asks of us, the peer's ORD (the REQ's initiator depth: IB CM
// cm_format_req_event; iWARP siw_proc_mpareq and siw_cm_upcall, then cma's
// iw_conn_req_handler), and initiator_depth is the depth we may initiate,
// the peer's IRD.
func fakeConnRequest(t *testing.T, iwarp bool, peerIRD, peerORD int) *connRequest {
	t.Helper()
	fd, err := newFakeDev()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fd.free() })
	return newConnRequest(fd.device(iwarp), nil, fd.connectRequest(peerORD, peerIRD))
}

// TestConnRequestPeerIRDORD: ConnRequest.IRD and ORD are the peer's
// advertised values (verbs.ConnRequest), as verbs/soft gives them: a Linux
// xprtrdma client, which takes Reads but issues none, has IRD 128 and ORD 0.
func TestConnRequestPeerIRDORD(t *testing.T) {
	for _, iwarp := range []bool{false, true} {
		r := fakeConnRequest(t, iwarp, 128, 0)
		if r.IRD() != 128 || r.ORD() != 0 {
			t.Errorf("iWARP %v: request from IRD 128 / ORD 0: IRD() %d, ORD() %d", iwarp, r.IRD(), r.ORD())
		}
		r = fakeConnRequest(t, iwarp, 3, 9)
		if r.IRD() != 3 || r.ORD() != 9 {
			t.Errorf("iWARP %v: request from IRD 3 / ORD 9: IRD() %d, ORD() %d", iwarp, r.IRD(), r.ORD())
		}
	}
}

// TestAcceptReadLimits: Accept keeps its ORD within the peer's IRD and takes
// at least the peer's ORD in inbound Reads, within the device's limits
// (rdma_accept(3): initiator_depth at most the request's initiator_depth,
// responder_resources preferably at least the request's
// responder_resources; siw_accept fails with ENOMEM an IRD below the
// peer's ORD unless it may raise it). An InfiniBand REQ always carries the
// peer's IRD, so 0 there means no Reads; an iWARP peer without enhanced MPA
// (RFC 6581) reports 0 for unknown. The fake device allows 16 each way.
func TestAcceptReadLimits(t *testing.T) {
	for _, c := range []struct {
		name             string
		iwarp            bool
		peerIRD, peerORD int
		p                verbs.ConnParams
		wantIRD, wantORD int
	}{
		{"defaults, peer IRD 8 ORD 2", false, 8, 2, verbs.ConnParams{}, 16, 8},
		{"rpcrdma server, Linux client", false, 128, 0, verbs.ConnParams{IRD: 1, ORD: 16}, 1, 16},
		{"ORD within the peer's IRD", true, 4, 0, verbs.ConnParams{IRD: 1, ORD: 12}, 1, 4},
		{"IRD raised to the peer's ORD", true, 16, 8, verbs.ConnParams{IRD: 2, ORD: 4}, 8, 4},
		{"IRD raised as far as the device allows", false, 16, 64, verbs.ConnParams{IRD: 2, ORD: 4}, 16, 4},
		{"InfiniBand peer IRD 0: no Reads", false, 0, 4, verbs.ConnParams{IRD: 4, ORD: 8}, 4, 0},
		{"iWARP without IRD/ORD", true, 0, 0, verbs.ConnParams{IRD: 4, ORD: 8}, 4, 8},
	} {
		r := fakeConnRequest(t, c.iwarp, c.peerIRD, c.peerORD)
		ird, ord, err := r.limits(c.p)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if ird != c.wantIRD || ord != c.wantORD {
			t.Errorf("%s: IRD %d ORD %d, want IRD %d ORD %d", c.name, ird, ord, c.wantIRD, c.wantORD)
		}
	}
}

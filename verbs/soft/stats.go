package soft

import (
	"errors"
	"sync/atomic"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TerminateCounts counts iWARP Terminate messages by the layer their error code
// names (RFC 5040 §7.2): RDMAP, DDP, or LLP (MPA). Other counts Terminates received
// with a layer no RFC defines.
type TerminateCounts struct {
	RDMAP, DDP, LLP, Other uint64
}

// Stats are a Device's cumulative counters.
type Stats struct {
	// TerminatesSent counts the Terminates its queue pairs sent on a protocol
	// violation; TerminatesReceived those its queue pairs received from peers.
	TerminatesSent, TerminatesReceived TerminateCounts
}

// termCounters are the live counters behind Stats.
type termCounters struct {
	sent, received [4]atomic.Uint64 // by layer: RDMAP, DDP, LLP, other
}

// Stats returns the device's counters.
func (d *Device) Stats() Stats {
	load := func(c *[4]atomic.Uint64) TerminateCounts {
		return TerminateCounts{RDMAP: c[iwarp.LayerRDMAP].Load(), DDP: c[iwarp.LayerDDP].Load(), LLP: c[iwarp.LayerLLP].Load(), Other: c[3].Load()}
	}
	return Stats{TerminatesSent: load(&d.terms.sent), TerminatesReceived: load(&d.terms.received)}
}

// noteFailure counts the Terminate a queue pair failing with cause sends (term, the
// frame, is non-nil) or received. It runs once per queue pair, on the failure path.
func (c *termCounters) noteFailure(cause error, term []byte) {
	var te *verbs.TerminateError
	if !errors.As(cause, &te) {
		return
	}
	layer := min(int(te.Layer), 3)
	switch {
	case te.Received:
		c.received[layer].Add(1)
	case term != nil:
		c.sent[layer].Add(1)
	}
}

package soft

import (
	"errors"
	"sync/atomic"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/iwarp"
)

// TerminateCounts counts iWARP Terminate messages by the layer their error code
// names (RFC 5040 §7.2): RDMAP, DDP, or LLP (MPA). Other counts Terminates received
// with a layer no RFC defines, or too malformed for their Terminate Control to be
// read.
type TerminateCounts struct {
	RDMAP, DDP, LLP, Other uint64
}

// Stats are a Device's cumulative counters.
type Stats struct {
	// TerminatesSent counts the Terminates its queue pairs sent on a protocol
	// violation; TerminatesReceived those its queue pairs received from peers.
	TerminatesSent, TerminatesReceived TerminateCounts
	// DirectFPDUs counts the FPDUs its queue pairs received on the goroutine
	// of a caller waiting for a completion (verbs.DirectProcessor) rather
	// than on their reader goroutines.
	DirectFPDUs uint64
	// ReadAheadPlaced counts Read Response payload bytes that were read
	// straight into the sink together with the FPDU before them and found in
	// place when their header was parsed; ReadAheadSpliced counts bytes read
	// that way that turned out to be something else (an FPDU cut differently
	// than predicted, another message in between) and were copied back into
	// the stream.
	ReadAheadPlaced, ReadAheadSpliced uint64
}

// termCounters are the live counters behind Stats.
type termCounters struct {
	sent, received [layerOther + 1]atomic.Uint64 // by layerSlot
}

// layerOther is the counter slot of the layers no RFC defines.
const layerOther = 3

// layerSlot is the counter slot of a Terminate's layer: RDMAP, DDP, LLP, or
// layerOther.
func layerSlot(l iwarp.Layer) int { return min(int(l), layerOther) }

// Stats returns the device's counters.
func (d *Device) Stats() Stats {
	load := func(c *[layerOther + 1]atomic.Uint64) TerminateCounts {
		return TerminateCounts{RDMAP: c[iwarp.LayerRDMAP].Load(), DDP: c[iwarp.LayerDDP].Load(), LLP: c[iwarp.LayerLLP].Load(), Other: c[layerOther].Load()}
	}
	return Stats{TerminatesSent: load(&d.terms.sent), TerminatesReceived: load(&d.terms.received),
		DirectFPDUs: d.directFPDUs.Load(), ReadAheadPlaced: d.aheadPlaced.Load(), ReadAheadSpliced: d.aheadSpliced.Load()}
}

// noteFailure counts the Terminate a queue pair failing with cause sends (term, the
// frame, is non-nil) or received. It runs once per queue pair, on the failure path.
func (c *termCounters) noteFailure(cause error, term []byte) {
	var te *verbs.TerminateError
	if !errors.As(cause, &te) {
		return
	}
	layer := layerSlot(iwarp.Layer(te.Layer))
	switch {
	case te.Received:
		c.received[layer].Add(1)
	case term != nil:
		c.sent[layer].Add(1)
	}
}

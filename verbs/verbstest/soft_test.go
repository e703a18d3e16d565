package verbstest_test

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/verbs/verbstest"
)

// TestSoft runs the conformance suite against the software iWARP provider.
func TestSoft(t *testing.T) {
	verbstest.Run(t, verbstest.Provider{
		Open:       func(testing.TB) verbs.Device { return soft.New(soft.Config{}) },
		ListenAddr: "127.0.0.1:0",
		// A CQ overrun fails the CQ, not the QP.
		OverrunKeepsQP: true,
	})
}

// TestSoftSmallFPDU runs it again with tiny FPDUs and MPA CRC, so every
// transfer is split across many frames.
func TestSoftSmallFPDU(t *testing.T) {
	verbstest.Run(t, verbstest.Provider{
		Open:       func(testing.TB) verbs.Device { return soft.New(soft.Config{MaxFPDU: 128, CRC: true}) },
		ListenAddr: "127.0.0.1:0",
		// A CQ overrun fails the CQ, not the QP.
		OverrunKeepsQP: true,
	})
}

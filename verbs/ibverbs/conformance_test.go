//go:build ibverbs && linux && cgo

package ibverbs

import (
	"errors"
	"os"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/verbstest"
)

// testConfig reads the device under test from the environment:
// IBVERBS_ADDR is the IP address of the network device the RDMA device is
// bound to (it is also where the suite listens); IBVERBS_DEVICE names the
// device instead. Without either, the test skips, unless IBVERBS_REQUIRE
// is set (the interop cases set it, so a missing device fails them).
func testConfig(t testing.TB) (Config, string) {
	addr, name := os.Getenv("IBVERBS_ADDR"), os.Getenv("IBVERBS_DEVICE")
	if addr == "" {
		if os.Getenv("IBVERBS_REQUIRE") != "" {
			t.Fatal("IBVERBS_REQUIRE is set but IBVERBS_ADDR is not")
		}
		t.Skip("no RDMA device configured: set IBVERBS_ADDR (and optionally IBVERBS_DEVICE) to run against one")
	}
	cfg := Config{Addr: addr}
	if name != "" {
		cfg = Config{Name: name}
	}
	d, err := Open(cfg)
	if err != nil {
		if os.Getenv("IBVERBS_REQUIRE") != "" || !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Open: %v", err)
		}
		t.Skipf("no RDMA device: %v", err)
	}
	d.Close()
	return cfg, addr
}

func openTest(t testing.TB, cfg Config) *Device {
	t.Helper()
	d, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
	})
	return d
}

// TestConformance runs the provider-agnostic verbs suite against the
// device, over loopback through the device (both ends in this process):
// with adaptive CQ polling (the default) and without it, where every wait
// arms the CQ and blocks in the completion channel.
func TestConformance(t *testing.T) {
	cfg, addr := testConfig(t)
	t.Run("CQPoll=default", func(t *testing.T) { conformance(t, cfg, addr) })
	cfg.CQPoll = -1
	t.Run("CQPoll=off", func(t *testing.T) { conformance(t, cfg, addr) })
}

func conformance(t *testing.T, cfg Config, addr string) {
	d := openTest(t, cfg)
	t.Logf("device %s (iWARP %v), attributes %+v, fork protection %s", d.Name(), d.IWARP(), d.Attr(), ForkStatus())
	p := verbstest.Provider{
		Open:            func(t testing.TB) verbs.Device { return openTest(t, cfg) },
		ListenAddr:      addr + ":0",
		NoSolicitedFlag: "ibv_wc reports no solicited-event flag",
		// What the device's CM carries (InfiniBand CM: 56 bytes).
		MaxConnectPrivateData: maxConnectPrivateData(d),
	}
	if cfg.CQPoll < 0 {
		p.NoDirectWaits = "CQ polling is off (Config.CQPoll < 0): ProcessDirect reports done at once and leaves the wait to the CQ's event goroutine"
	} else {
		p.DirectWaitsBounded = "ProcessDirect polls the CQ for Config.CQPoll, shorter than a round trip under emulation"
	}
	if d.IWARP() {
		p.NoRemoteInvalidate = "libsiw (rdma-core 44) reports no IBV_WC_WITH_INV and no invalidated rkey in work completions, so the receiver cannot learn which STag a Send with Invalidate invalidated (the host peer case ibverbs-soft-siw sends one from siw)"
	} else {
		p.NoRemoteInvalidate = "Soft-RoCE (rxe) remotely invalidates only fast-registered regions (IB_MR_TYPE_MEM_REG) and memory windows, not ibv_reg_mr regions"
		p.PrivateDataPadded = true
	}
	verbstest.Run(t, p)
}

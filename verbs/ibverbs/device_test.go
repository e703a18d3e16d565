//go:build ibverbs && linux && cgo

package ibverbs

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestOpenConfigErrors(t *testing.T) {
	if _, err := Open(Config{Name: "rxe0", Addr: "10.0.2.15"}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("Name and Addr: %v", err)
	}
	if _, err := Open(Config{Addr: "not-an-ip"}); err == nil {
		t.Error("Addr not an IP: no error")
	}
	if _, err := Open(Config{Name: "no-such-device0"}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("unknown device: %v, want ErrNoDevice", err)
	}
}

// TestNoDevice checks the error on a machine without RDMA devices (the CI
// host); it skips where a device exists.
func TestNoDevice(t *testing.T) {
	if names, err := DeviceNames(); err == nil && len(names) > 0 {
		t.Skipf("devices present: %v", names)
	}
	_, err := Open(Config{})
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "rdma link add") {
		t.Fatalf("Open without devices: %v, want ErrNoDevice with a hint", err)
	}
}

func TestForkStatus(t *testing.T) {
	switch s := ForkStatus(); s {
	case "disabled", "enabled", "unneeded":
	default:
		t.Fatalf("ForkStatus %q", s)
	}
}

// TestDeviceLimits checks the limit errors against a real device.
func TestDeviceLimits(t *testing.T) {
	cfg, _ := testConfig(t)
	d := openTest(t, cfg)
	if d.pid != os.Getpid() {
		t.Fatal("pid not recorded")
	}
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	cq, err := d.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	if _, err := d.CreateCQ(d.Attr().MaxCQE + 1); !errors.Is(err, ErrLimit) {
		t.Errorf("CreateCQ beyond max_cqe: %v, want ErrLimit", err)
	}
	if _, err := pd.CreateQP(qpConfig(cq, d.Attr().MaxQPWR+1)); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "max_qp_wr") {
		t.Errorf("CreateQP beyond max_qp_wr: %v, want ErrLimit naming max_qp_wr", err)
	}
	d.pid = -1 // pretend this is a forked child
	if _, err := pd.RegMR(make([]byte, 8), 0); !errors.Is(err, ErrForked) {
		t.Errorf("RegMR in a \"forked child\": %v, want ErrForked", err)
	}
	d.pid = os.Getpid()
}

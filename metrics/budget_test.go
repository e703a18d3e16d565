package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-rpcrdma/rpcrdma/metrics"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// gaugeValue gathers reg and returns the value of the unlabelled gauge name.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// The bytes-in-flight gauge follows what calls in progress hold in the memory
// budget, and the budget gauge shows its limit.
func TestBudgetGauges(t *testing.T) {
	b := oncrpc.NewBudget(32 << 20)
	c := metrics.New()
	c.AddBudget(b)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if v := gaugeValue(t, reg, "rpcrdma_rpc_bytes_budget"); v != 32<<20 {
		t.Errorf("budget %v, want %d", v, 32<<20)
	}
	if v := gaugeValue(t, reg, "rpcrdma_rpc_bytes_in_flight"); v != 0 {
		t.Errorf("in flight %v before any call, want 0", v)
	}
	a := b.Account(8 << 20)
	if !a.TryReserve(1 << 20) {
		t.Fatal("reserve 1 MiB within the budget refused")
	}
	if v := gaugeValue(t, reg, "rpcrdma_rpc_bytes_in_flight"); v != 1<<20 {
		t.Errorf("in flight %v with 1 MiB reserved", v)
	}
	a.Release(1 << 20)
	if v := gaugeValue(t, reg, "rpcrdma_rpc_bytes_in_flight"); v != 0 {
		t.Errorf("in flight %v after the release", v)
	}
}

// An unbounded budget (limit <= 0) reports a budget of 0, as the metric's help says,
// and leaves the sum over several budgets unbounded.
func TestBudgetGaugeUnbounded(t *testing.T) {
	c := metrics.New()
	c.AddBudget(oncrpc.NewBudget(-1))
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if v := gaugeValue(t, reg, "rpcrdma_rpc_bytes_budget"); v != 0 {
		t.Errorf("budget %v for an unbounded budget, want 0", v)
	}
	c.AddBudget(oncrpc.NewBudget(32 << 20))
	if v := gaugeValue(t, reg, "rpcrdma_rpc_bytes_budget"); v != 0 {
		t.Errorf("budget %v with one of two budgets unbounded, want 0", v)
	}
}

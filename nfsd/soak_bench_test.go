//go:build linux

package nfsd

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"
)

var soakUnbounded = flag.Bool("soak.unbounded", false, "BenchmarkSoakHostile: also run with the memory budgets and stall timeouts off (the attack then takes ~64 MiB per hostile client)")

// BenchmarkSoakHostile measures a well-behaved RDMA client's READs of 1 MiB (one
// per iteration; p50 and p99 latency) and the server's heap growth while hostile
// clients each keep 64 READs of 1 MiB outstanding and never read their socket (the
// attack of issue #11), with the default budgets (and, with -soak.unbounded, without
// any). The stall timeouts are off so that the attack lasts the whole benchmark.
//
//	go test -run '^$' -bench SoakHostile -benchtime 200x ./nfsd
func BenchmarkSoakHostile(b *testing.B) {
	type mode struct {
		name string
		cfg  Config
	}
	modes := []mode{{"budget=default", Config{SendTimeout: -1, ReadTimeout: -1}}}
	if *soakUnbounded {
		modes = append(modes, mode{"budget=off", Config{SendTimeout: -1, ReadTimeout: -1, MemBudget: -1, ConnMemBudget: -1}})
	}
	for _, m := range modes {
		for _, n := range []int{0, 16} {
			b.Run(fmt.Sprintf("%s/hostile=%d", m.name, n), func(b *testing.B) {
				soakHostile(b, m.cfg, n)
			})
		}
	}
}

func soakHostile(b *testing.B, cfg Config, hostiles int) {
	const qd = 64
	s := startHostileServer(b, cfg)
	good := s.dialRDMA(b, s.info.RDMA.String())
	base, baseStacks := heapInUse(), stacksInUse()
	var hs []*hostile
	for i := 0; i < hostiles; i++ {
		hs = append(hs, s.startHostile(b, qd, false))
	}
	bud := s.info.Budget
	// Let the attack reach the server: every hostile call holds a READ buffer, or
	// the budget is spent.
	want := int64(hostiles * qd << 20)
	if bud.Limit() > 0 {
		want = min(want, bud.Limit())
	}
	settle(b, bud.InUse, want)
	buf := make([]byte, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		n, _, err := good.Read(ctx, good.fh, 0, buf)
		lat = append(lat, time.Since(t0))
		if err != nil || n != len(buf) {
			b.Fatalf("READ during the attack: n=%d err=%v", n, err)
		}
	}
	b.StopTimer()
	peak, stacks := heapInUse(), stacksInUse()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
	b.ReportMetric(float64(int64(peak)-int64(base))/(1<<20), "heap-MiB")
	b.ReportMetric(float64(bud.InUse())/(1<<20), "budget-MiB")
	b.ReportMetric(float64(int64(stacks)-int64(baseStacks))/(1<<20), "stacks-MiB")
	for _, h := range hs {
		h.stop()
	}
}

// settle waits until inUse reaches want or has not grown for a second (the hostile
// clients' credits may allow fewer calls than they asked for), at most a minute.
func settle(b *testing.B, inUse func() int64, want int64) {
	last, still := inUse(), 0
	for i := 0; i < 600 && last < want && still < 10; i++ {
		time.Sleep(100 * time.Millisecond)
		if n := inUse(); n > last {
			last, still = n, 0
		} else {
			still++
		}
	}
}

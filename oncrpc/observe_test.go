package oncrpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The Observe hook sees every decoded call over a real TCP connection, with its
// outcome; ProcStats counts them per procedure, and the calls to a procedure,
// version or program the server does not serve under OtherProc.
func TestObserveCountsCallsByOutcome(t *testing.T) {
	var ps ProcStats
	_, addr := startTCPServer(t, &ServerOptions{Observe: ps.Observe}, echoHandler())
	tr := dialTCP(t, addr, nil)
	c := NewClient(tr, testProg, testVers)
	ctx := context.Background()
	for range 5 {
		if err := c.Call(ctx, procNull, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	var out bytesRes
	for range 3 {
		if err := c.Call(ctx, procEcho, payloadArg([]byte("abc")), &out); err != nil {
			t.Fatal(err)
		}
	}
	var ae *AcceptError
	if err := c.Call(ctx, 99, nil, nil); !errors.As(err, &ae) || ae.Stat != ProcUnavail {
		t.Fatalf("proc 99: %v, want PROC_UNAVAIL", err)
	}
	other := NewClient(tr, testProg+1, 1)
	if err := other.Call(ctx, 0, nil, nil); !errors.As(err, &ae) || ae.Stat != ProgUnavail {
		t.Fatalf("unknown program: %v, want PROG_UNAVAIL", err)
	}
	otherVers := NewClient(tr, testProg, testVers+1)
	if err := otherVers.Call(ctx, 0, nil, nil); !errors.As(err, &ae) || ae.Stat != ProgMismatch {
		t.Fatalf("unknown version: %v, want PROG_MISMATCH", err)
	}

	// The observer runs after the reply is handed to the transport: the client may
	// see the reply first.
	want := []struct {
		k       ProcKey
		o       Outcome
		n       uint64
		outcome string
	}{
		{ProcKey{testProg, testVers, procNull, "tcp"}, OutcomeSuccess, 5, "success"},
		{ProcKey{testProg, testVers, procEcho, "tcp"}, OutcomeSuccess, 3, "success"},
		{OtherProc, OutcomeProcUnavail, 1, "proc_unavail"},
		{OtherProc, OutcomeProgUnavail, 1, "prog_unavail"},
		{OtherProc, OutcomeProgMismatch, 1, "prog_mismatch"},
	}
	calls := map[ProcKey]uint64{}
	for _, w := range want {
		calls[w.k] += w.n
	}
	for k, n := range calls {
		var got ProcCounters
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			got = ps.Get(k)
			if got.Calls() >= n || time.Now().After(deadline) {
				break
			}
		}
		if got.Calls() != n {
			t.Errorf("%+v: %d calls (outcomes %v), want %d", k, got.Calls(), got.Outcomes, n)
		}
		var inBuckets uint64
		for _, b := range got.Buckets {
			inBuckets += b
		}
		if inBuckets != n || got.Sum <= 0 {
			t.Errorf("%+v: %d calls in the histogram (sum %v), want %d", k, inBuckets, got.Sum, n)
		}
	}
	for _, w := range want {
		if got := ps.Get(w.k); got.Outcomes[w.o] != w.n {
			t.Errorf("%+v: outcomes %v, want %d %v", w.k, got.Outcomes, w.n, w.o)
		}
		if w.o.String() != w.outcome {
			t.Errorf("Outcome(%d).String() = %q, want %q", w.o, w.o, w.outcome)
		}
	}
	seen := 0
	ps.Each(func(k ProcKey, c *ProcCounters) { seen++ })
	if seen != len(calls) {
		t.Errorf("Each saw %d procedures, want %d", seen, len(calls))
	}
}

// TestUnservedCallsDoNotCrowdOutProcs: a peer calling MaxProcKeys made-up programs
// (PROG_UNAVAIL), versions (PROG_MISMATCH) or procedures (PROC_UNAVAIL) does not
// fill the table: those calls are counted under OtherProc, and a served procedure
// called afterwards still gets its own key. Every decoded call used to get a key
// of its own, first come first served, so the probes pushed the server's real
// procedures into OtherProc until restart.
func TestUnservedCallsDoNotCrowdOutProcs(t *testing.T) {
	for _, o := range []Outcome{OutcomeProgUnavail, OutcomeProgMismatch, OutcomeProcUnavail} {
		var ps ProcStats
		for i := range uint32(MaxProcKeys) {
			ps.Observe(CallInfo{Prog: 0x40000000 + i, Vers: 1 + i, Proc: i, Netid: "tcp", Outcome: o})
		}
		read := ProcKey{Prog: 100003, Vers: 3, Proc: 6, Netid: "tcp"}
		ps.Observe(CallInfo{Prog: read.Prog, Vers: read.Vers, Proc: read.Proc, Netid: read.Netid, Outcome: OutcomeSuccess})
		if c := ps.Get(read); c.Calls() != 1 {
			t.Errorf("after %d %v calls: the served procedure counted %d times under its own key, want 1", MaxProcKeys, o, c.Calls())
		}
		if c := ps.Get(OtherProc); c.Outcomes[o] != MaxProcKeys || c.Calls() != MaxProcKeys {
			t.Errorf("%v calls: OtherProc outcomes %v, want %d %v", o, c.Outcomes, MaxProcKeys, o)
		}
		n := 0
		ps.Each(func(ProcKey, *ProcCounters) { n++ })
		if n != 2 {
			t.Errorf("after %d %v calls and one served: %d keys, want 2 (OtherProc and the served one)", MaxProcKeys, o, n)
		}
	}
}

// A client making up procedure numbers that a handler answers other than with
// PROC_UNAVAIL (here GARBAGE_ARGS) cannot grow the table without bound: past
// MaxProcKeys the calls go to OtherProc.
func TestHostileProcStatsBounded(t *testing.T) {
	var ps ProcStats
	for i := range uint32(3 * MaxProcKeys) {
		ps.Observe(CallInfo{Prog: 1, Vers: 1, Proc: i, Netid: "tcp", Outcome: OutcomeGarbageArgs, Duration: time.Microsecond})
	}
	n := 0
	ps.Each(func(ProcKey, *ProcCounters) { n++ })
	if n != MaxProcKeys {
		t.Fatalf("%d procedures kept, want %d", n, MaxProcKeys)
	}
	if got := ps.Get(OtherProc).Outcomes[OutcomeGarbageArgs]; got != 3*MaxProcKeys-(MaxProcKeys-1) {
		t.Fatalf("OtherProc counted %d calls, want %d", got, 3*MaxProcKeys-(MaxProcKeys-1))
	}
}

// Latencies land in the bucket whose bound is the first at or above them.
func TestProcStatsBuckets(t *testing.T) {
	var ps ProcStats
	ci := CallInfo{Prog: 1, Vers: 1, Proc: 1, Netid: "rdma", Outcome: OutcomeSuccess}
	ps.Observe(ci)
	ci.Duration = LatencyBuckets[0]
	ps.Observe(ci)
	ci.Duration = LatencyBuckets[0] + 1
	ps.Observe(ci)
	ci.Outcome, ci.Duration = OutcomeSystemErr, time.Hour
	ps.Observe(ci)
	ci.Netid = "tcp" // another key
	ps.Observe(ci)
	got := ps.Get(ProcKey{1, 1, 1, "rdma"})
	if got.Buckets[0] != 2 || got.Buckets[1] != 1 || got.Buckets[NumLatencyBuckets-1] != 1 {
		t.Fatalf("buckets %v", got.Buckets)
	}
	if got.Outcomes[OutcomeSuccess] != 3 || got.Outcomes[OutcomeSystemErr] != 1 {
		t.Fatalf("outcomes %v", got.Outcomes)
	}
	if tcp := ps.Get(ProcKey{1, 1, 1, "tcp"}); tcp.Calls() != 1 || tcp.Outcomes[OutcomeSystemErr] != 1 {
		t.Fatalf("tcp key: outcomes %v, want the one SYSTEM_ERR call", tcp.Outcomes)
	}
}

// With an observer, a NULL round trip over TCP still does not allocate, and neither
// does ProcStats.Observe for a procedure already seen.
func TestObserveDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	var ps ProcStats
	ci := CallInfo{Prog: 1, Vers: 2, Proc: 3, Netid: "tcp", Outcome: OutcomeSuccess, Duration: time.Millisecond}
	if a := testing.AllocsPerRun(1000, func() { ps.Observe(ci) }); a > 0 {
		t.Fatalf("ProcStats.Observe: %.2f allocs", a)
	}
	_, addr := startTCPServer(t, &ServerOptions{Observe: ps.Observe}, echoHandler())
	c := NewClient(dialTCP(t, addr, nil), testProg, testVers)
	ctx := context.Background()
	if err := c.Call(ctx, procNull, nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if err := c.Call(ctx, procNull, nil, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs >= 0.5 {
		t.Fatalf("%.2f allocs per observed NULL round trip over TCP", allocs)
	}
}

// BenchmarkProcStatsObserve is the per-call cost of the observer alone, and of a NULL
// round trip over TCP with and without it (time.Now/Since and ProcStats.Observe):
//
//	go test -run '^$' -bench 'ProcStatsObserve|NullRPCObserved' -count 5 ./oncrpc
func BenchmarkProcStatsObserve(b *testing.B) {
	var ps ProcStats
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ps.Observe(CallInfo{Prog: 100003, Vers: 3, Proc: 6, Netid: "rdma", Outcome: OutcomeSuccess, Duration: 40 * time.Microsecond})
		}
	})
}

func BenchmarkNullRPCObserved(b *testing.B) {
	for _, observed := range []bool{false, true} {
		name := "off"
		var opts *ServerOptions
		if observed {
			name = "on"
			opts = &ServerOptions{Observe: new(ProcStats).Observe}
		}
		b.Run("observe="+name, func(b *testing.B) {
			_, addr := startTCPServer(b, opts, echoHandler())
			c := NewClient(dialTCP(b, addr, nil), testProg, testVers)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Call(ctx, procNull, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

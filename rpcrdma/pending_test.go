package rpcrdma

import (
	"math/rand/v2"
	"testing"
)

// TestPendingCallsMatchesMap runs random puts, takes and lookups on pendingCalls and
// on a Go map side by side and fails at the first difference. XIDs are drawn from a
// consecutive run (as oncrpc.Client makes them) and from a small random set held
// at up to half the table's size, so probe runs collide, wrap around the table's end
// and are cut by deletions; the table grows from its initial size several times.
func TestPendingCallsMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := newPendingCalls()
	model := map[uint32]*request{}
	reqs := make([]request, 512)
	random := make([]uint32, 400)
	for i := range random {
		random[i] = rng.Uint32()
	}
	xid := func() uint32 {
		if rng.IntN(2) == 0 {
			return 1000 + uint32(rng.IntN(300)) // consecutive
		}
		return random[rng.IntN(len(random))]
	}
	for step := range 200000 {
		x := xid()
		switch op := rng.IntN(10); {
		case op < 5 && len(model) < 300:
			r := &reqs[rng.IntN(len(reqs))]
			p.put(x, r)
			model[x] = r
		case op < 8:
			got, ok := p.take(x)
			want, wok := model[x]
			delete(model, x)
			if ok != wok || got != want {
				t.Fatalf("step %d: take(%#x) = %p, %v; want %p, %v", step, x, got, ok, want, wok)
			}
		default:
			if _, wok := model[x]; p.has(x) != wok {
				t.Fatalf("step %d: has(%#x) = %v, want %v", step, x, !wok, wok)
			}
		}
		if p.n != len(model) {
			t.Fatalf("step %d: %d pending, want %d", step, p.n, len(model))
		}
	}
	if len(p.slots) <= minPendingSlots {
		t.Fatalf("the table never grew (%d slots); the test does not exercise growth", len(p.slots))
	}
	seen := 0
	p.drain(func(r *request) { seen++ })
	if seen != len(model) || p.n != 0 || p.has(1000) {
		t.Fatalf("drain saw %d of %d requests, %d left", seen, len(model), p.n)
	}
	for x := range model {
		if p.has(x) {
			t.Fatalf("xid %#x still pending after drain", x)
		}
	}
}

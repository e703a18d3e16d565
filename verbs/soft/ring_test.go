package soft

import (
	"errors"
	"math/bits"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestCQRingGrowsOnDemand pins the memory an idle CQ holds: its ring starts at
// cqInitRing entries whatever its depth, doubles only as completions pile up,
// keeps them in order across growth, and never holds more than depth (the
// completion beyond it overruns the CQ as before).
func TestCQRingGrowsOnDemand(t *testing.T) {
	const depth = 254
	cq, err := New(Config{}).CreateCQ(depth)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	c := cq.(*compQueue)
	if len(c.ring) != cqInitRing {
		t.Fatalf("new CQ of depth %d holds a ring of %d entries, want %d", depth, len(c.ring), cqInitRing)
	}
	// Wrap the ring once so that growth has to unwrap it.
	var wc [depth]verbs.Completion
	for i := 0; i < cqInitRing/2; i++ {
		c.push(&verbs.Completion{ID: uint64(1000 + i)})
	}
	if n, err := c.Poll(wc[:]); n != cqInitRing/2 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	for i := 0; i < depth; i++ {
		c.push(&verbs.Completion{ID: uint64(i)})
		if want := min(max(cqInitRing, 1<<bits.Len(uint(i))), depth); len(c.ring) > want {
			t.Fatalf("after %d completions the ring holds %d entries, want at most %d", i+1, len(c.ring), want)
		}
	}
	if len(c.ring) != depth {
		t.Fatalf("full CQ ring holds %d entries, want depth %d", len(c.ring), depth)
	}
	c.push(&verbs.Completion{ID: depth})
	if len(c.ring) != depth {
		t.Fatalf("overrun grew the ring to %d entries beyond depth %d", len(c.ring), depth)
	}
	n, err := c.Poll(wc[:])
	if n != depth || err != nil {
		t.Fatalf("Poll = %d, %v; want %d completions", n, err, depth)
	}
	for i := 0; i < n; i++ {
		if wc[i].ID != uint64(i) {
			t.Fatalf("completion %d has ID %d: order lost across growth", i, wc[i].ID)
		}
	}
	var oe *verbs.CQOverrunError
	if _, err := c.Poll(wc[:]); !errors.As(err, &oe) || oe.Depth != depth {
		t.Fatalf("Poll after overrun = %v, want CQOverrunError{Depth: %d}", err, depth)
	}
}

package rpcrdma

import (
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// refusingPD wraps a PD so that its MRs refuse Reregister, as rxe did when a region
// without remote access kept rkey 0.
type refusingPD struct{ verbs.PD }

type refusingMR struct {
	verbs.MR
	closed bool
}

var errRefused = errors.New("reregister refused")

func (pd refusingPD) RegMR(buf []byte, access verbs.Access) (verbs.MR, error) {
	mr, err := pd.PD.RegMR(buf, access)
	if err != nil {
		return nil, err
	}
	return &refusingMR{MR: mr}, nil
}

func (m *refusingMR) Reregister(verbs.Access) error { return errRefused }
func (m *refusingMR) Close() error                  { m.closed = true; return m.MR.Close() }

// A pooled buffer whose re-registration fails is dropped and deregistered, and the
// caller gets a fresh registration with the access it asked for — never the old
// buffer with stale rights.
func TestBufPoolDropsBufferThatFailsReregister(t *testing.T) {
	dev := soft.New(soft.Config{})
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	p := &bufPool{pd: refusingPD{pd}}
	defer p.close()

	first, err := p.get(1000, verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	p.put(first)
	second, err := p.get(1000, verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatal("pool handed out the buffer whose re-registration failed")
	}
	if !first.mr.(*refusingMR).closed {
		t.Fatal("the buffer that failed to re-register was not deregistered")
	}
	if got := second.mr.Access(); got&verbs.AccessRemoteWrite == 0 {
		t.Fatalf("fresh buffer has access %v, want RemoteWrite", got)
	}
	if len(p.all) != 1 || p.all[0] != second || len(p.free) != 0 {
		t.Fatalf("pool bookkeeping: all %d free %d", len(p.all), len(p.free))
	}
}

// A small message takes the smallest idle buffer that holds it, leaving the large one
// for a large message, which then registers nothing new.
func TestBufPoolBestFit(t *testing.T) {
	dev := soft.New(soft.Config{})
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	p := &bufPool{pd: pd}
	defer p.close()

	large, err := p.get(1<<20+100, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	small, err := p.get(4200, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	p.put(large) // the large one first, so a first-fit scan would find it first
	p.put(small)
	if b, err := p.get(4200, verbs.AccessLocalWrite); err != nil || b != small {
		t.Fatalf("small message got %p (%v), want the small buffer %p", b, err, small)
	}
	if b, err := p.get(1<<20+100, verbs.AccessLocalWrite); err != nil || b != large {
		t.Fatalf("large message got %p (%v), want the large buffer %p", b, err, large)
	}
	if n := len(p.all); n != 2 {
		t.Fatalf("%d buffers registered, want 2", n)
	}
}

// Buffers are at least 64 KiB and waste at most a quarter of their size.
func TestBufSize(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{1, 64 << 10}, {64 << 10, 64 << 10}, {64<<10 + 1, 80 << 10},
		{96 << 10, 96 << 10}, {112<<10 + 1, 128 << 10},
		{1<<20 + 200, 1280 << 10}, {2 << 20, 2 << 20}, {2<<20 + 1, 2560 << 10},
	} {
		if got := bufSize(c.n); got != c.want {
			t.Errorf("bufSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	for n := 1; n < 8<<20; n += 4093 {
		if s := bufSize(n); s < n || (s > minBuf && s-n > s/4) {
			t.Fatalf("bufSize(%d) = %d", n, s)
		}
	}
}

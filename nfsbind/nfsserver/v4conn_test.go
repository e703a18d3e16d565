//go:build linux

package nfsserver

import (
	"context"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4state"
)

// TestV4ConnIDs: a connection keeps its identity while it lives; when its context
// ends the entry goes and the state manager is told; past maxConnIDs an arbitrary
// entry goes the same way, so the table stays bounded.
func TestV4ConnIDs(t *testing.T) {
	closed := make(chan nfs4state.ConnID, maxConnIDs+8)
	var x connIDs
	x.init(func(id nfs4state.ConnID) { closed <- id })
	ctx, cancel := context.WithCancel(context.Background())
	a, b := &memConn{}, &memConn{}
	ida := x.of(ctx, a)
	if x.of(ctx, a) != ida || x.of(context.Background(), b) == ida || x.of(context.Background(), nil) != 0 {
		t.Fatal("identities are not per connection")
	}
	cancel()
	if got := <-closed; got != ida {
		t.Fatalf("closed %d, want %d", got, ida)
	}
	if x.len() != 1 {
		t.Fatalf("%d entries after the first connection ended, want 1", x.len())
	}
	for range maxConnIDs + 5 {
		x.of(context.Background(), &memConn{})
	}
	if n := x.len(); n != maxConnIDs {
		t.Fatalf("%d entries, want the bound %d", n, maxConnIDs)
	}
	if n := len(closed); n != 6 {
		t.Fatalf("%d evictions reported, want 6", n)
	}
}

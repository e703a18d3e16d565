//go:build linux

package nfsserver

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// v4client is a test-only NFSv4.1 client: oncrpc.Client plus the nfs4 codec, one
// session with one slot.
type v4client struct {
	t     *testing.T
	rpc   *oncrpc.Client
	owner []byte
	cid   uint64
	csseq uint32
	sid   nfs4.SessionID
	slot  uint32
	seq   uint32
	// opts are the call options of the next call (reply sinks, MaxReply); reset
	// after each call.
	opts oncrpc.CallOptions
	// csFlags are the csa_flags of createSession.
	csFlags uint32
	// secParms are the csa_sec_parms of createSession (nil: AUTH_NONE).
	secParms []nfs4.CallbackSecParms4
}

var v4Owners atomic.Int64

// newV4Client returns a client on rt with credentials cred (nil: AUTH_NONE), not yet
// known to the server.
func newV4Client(t *testing.T, rt oncrpc.RoundTripper, cred *oncrpc.AuthSysParams) *v4client {
	t.Helper()
	var opts []oncrpc.ClientOption
	if cred != nil {
		auth, err := oncrpc.NewAuthSys(cred)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, oncrpc.WithAuth(auth))
	}
	return &v4client{t: t, rpc: oncrpc.NewClient(rt, nfs4.Program, nfs4.Version, opts...),
		owner: fmt.Appendf(nil, "%s-%d-%d", t.Name(), v4Owners.Add(1), time.Now().UnixNano())}
}

// detach4 copies every byte slice reachable from v, since the decoded results alias
// the client's reply buffer, which the next call reuses.
func detach4(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			detach4(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				detach4(v.Field(i))
			}
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			detach4(v.Index(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if !v.IsNil() && v.CanSet() {
				v.SetBytes(bytes.Clone(v.Bytes()))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			detach4(v.Index(i))
		}
	}
}

type ownedCompound struct{ r *nfs4.CompoundRes }

func (o ownedCompound) DecodeXDR(d *xdr.Decoder) error {
	if err := o.r.DecodeXDR(d); err != nil {
		return err
	}
	detach4(reflect.ValueOf(o.r))
	return nil
}

// raw sends a COMPOUND of exactly ops with minor version minor.
func (c *v4client) raw(minor uint32, ops ...nfs4.OpArgs) (*nfs4.CompoundRes, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := &nfs4.CompoundArgs{Tag: []byte("test"), MinorVersion: minor, Ops: ops}
	var res nfs4.CompoundRes
	o := c.opts
	c.opts = oncrpc.CallOptions{}
	if err := c.rpc.CallWithOptions(ctx, nfs4.ProcCompound, args, ownedCompound{&res}, o); err != nil {
		return nil, err
	}
	return &res, nil
}

// rawMust is raw, failing the test on an RPC error.
func (c *v4client) rawMust(ops ...nfs4.OpArgs) *nfs4.CompoundRes {
	c.t.Helper()
	res, err := c.raw(nfs4.MinorVersion, ops...)
	if err != nil {
		c.t.Fatalf("COMPOUND %v: %v", opNames(ops), err)
	}
	return res
}

func opNames(ops []nfs4.OpArgs) []string {
	var s []string
	for _, o := range ops {
		s = append(s, o.Op().String())
	}
	return s
}

// sequenceArgs returns the SEQUENCE of the next request on the client's slot.
func (c *v4client) sequenceArgs(cache bool) *nfs4.SequenceArgs {
	c.seq++
	return &nfs4.SequenceArgs{SessionID: c.sid, SequenceID: c.seq, SlotID: c.slot, HighestSlotID: c.slot, CacheThis: cache}
}

// call sends SEQUENCE and ops in the session and returns the results (SEQUENCE's
// first).
func (c *v4client) call(ops ...nfs4.OpArgs) *nfs4.CompoundRes {
	c.t.Helper()
	return c.rawMust(append([]nfs4.OpArgs{c.sequenceArgs(false)}, ops...)...)
}

// must is call, failing the test unless every operation succeeded.
func (c *v4client) must(ops ...nfs4.OpArgs) *nfs4.CompoundRes {
	c.t.Helper()
	res := c.call(ops...)
	if res.Status != nfs4.OK {
		c.t.Fatalf("COMPOUND %v: %v (after %d results)", opNames(ops), res.Status, len(res.Results))
	}
	return res
}

// wantStatus4 checks the status of a COMPOUND and of its last result.
func wantStatus4(t *testing.T, what string, res *nfs4.CompoundRes, want nfs4.Status) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("%s: %v, want %v", what, res.Status, want)
	}
	if n := len(res.Results); n > 0 && res.Results[n-1].Result() != want {
		t.Fatalf("%s: last result %v %v, want %v", what, res.Results[n-1].Op(), res.Results[n-1].Result(), want)
	}
}

// exchangeID makes the client known to the server.
func (c *v4client) exchangeID() {
	c.t.Helper()
	res := c.rawMust(&nfs4.ExchangeIDArgs{ClientOwner: nfs4.ClientOwner4{Verifier: nfs4.Verifier{1, 2, 3}, OwnerID: c.owner}})
	wantStatus4(c.t, "EXCHANGE_ID", res, nfs4.OK)
	r := res.Results[0].(*nfs4.ExchangeIDRes)
	c.cid, c.csseq = r.ClientID, r.SequenceID
}

// defaultFore is a fore channel as a Linux client over RDMA asks for it.
var defaultFore = nfs4.ChannelAttrs4{MaxRequestSize: 1<<20 + 8192, MaxResponseSize: 1<<20 + 8192,
	MaxResponseSizeCached: 8192, MaxOperations: 16, MaxRequests: 8}

// createSession creates the client's session.
func (c *v4client) createSession() {
	c.t.Helper()
	res := c.rawMust(&nfs4.CreateSessionArgs{ClientID: c.cid, Sequence: c.csseq, Flags: c.csFlags, ForeChanAttrs: defaultFore,
		BackChanAttrs: nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1},
		CBProgram:     0x40000000, SecParms: c.callbackSec()})
	wantStatus4(c.t, "CREATE_SESSION", res, nfs4.OK)
	r := res.Results[0].(*nfs4.CreateSessionRes)
	c.sid, c.seq, c.slot = r.SessionID, 0, 0
	c.csseq++
}

// callbackSec returns the client's callback security parameters.
func (c *v4client) callbackSec() []nfs4.CallbackSecParms4 {
	if c.secParms == nil {
		return []nfs4.CallbackSecParms4{{Flavor: nfs4.AuthNone}}
	}
	return c.secParms
}

// mount does what a Linux client does first: EXCHANGE_ID, CREATE_SESSION,
// RECLAIM_COMPLETE.
func (c *v4client) mount() {
	c.t.Helper()
	c.exchangeID()
	c.createSession()
	c.must(&nfs4.ReclaimCompleteArgs{})
}

// putroot returns PUTROOTFH and a LOOKUP of each component of path.
func putroot(path ...string) []nfs4.OpArgs {
	ops := []nfs4.OpArgs{&nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}}
	for _, p := range path {
		ops = append(ops, &nfs4.LookupArgs{ObjName: []byte(p)})
	}
	return ops
}

// getfh returns the handle the last GETFH of res returned.
func getfh(t *testing.T, res *nfs4.CompoundRes) nfs4.FH {
	t.Helper()
	for i := len(res.Results) - 1; i >= 0; i-- {
		if r, ok := res.Results[i].(*nfs4.GetfhRes); ok {
			return r.Object
		}
	}
	t.Fatal("no GETFH result")
	return nil
}

// lookupFH returns the handle of path from the pseudo root.
func (c *v4client) lookupFH(path ...string) nfs4.FH {
	c.t.Helper()
	return getfh(c.t, c.must(append(putroot(path...), &nfs4.NoArgs{OpNum: nfs4.OpGetfh})...))
}

// getattr returns the attributes of fh in mask.
func (c *v4client) getattr(fh nfs4.FH, attrs ...nfs4.Attr) *nfs4.Fattr {
	c.t.Helper()
	res := c.must(&nfs4.PutfhArgs{Object: fh}, &nfs4.GetattrArgs{AttrRequest: nfs4.NewBitmap(attrs...)})
	return &res.Results[2].(*nfs4.GetattrRes).Attr
}

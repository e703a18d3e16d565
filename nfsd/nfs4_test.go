//go:build linux

package nfsd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

// compound4 sends one COMPOUND of ops and returns its results.
func compound4(t *testing.T, c *oncrpc.Client, ops ...nfs4.OpArgs) *nfs4.CompoundRes {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var res nfs4.CompoundRes
	if err := c.Call(ctx, nfs4.ProcCompound, &nfs4.CompoundArgs{MinorVersion: 1, Ops: ops}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != nfs4.OK {
		t.Fatalf("COMPOUND: %v after %d results", res.Status, len(res.Results))
	}
	return &res
}

// readBig4 reads the first bytes of the export's file "big" with NFSv4.1 over rt, as
// a client that mounts with vers=4.1 does: EXCHANGE_ID, CREATE_SESSION,
// RECLAIM_COMPLETE (without which an OPEN is NFS4ERR_GRACE), then in the session
// PUTROOTFH, LOOKUP of each component of the export path, OPEN, READ. It returns the
// lease time the server reports.
func readBig4(t *testing.T, rt oncrpc.RoundTripper, exportPath, owner string) uint32 {
	t.Helper()
	c := oncrpc.NewClient(rt, nfs4.Program, nfs4.Version)
	res := compound4(t, c, &nfs4.ExchangeIDArgs{ClientOwner: nfs4.ClientOwner4{OwnerID: []byte(owner)}})
	ex := res.Results[0].(*nfs4.ExchangeIDRes)
	fore := nfs4.ChannelAttrs4{MaxRequestSize: 1 << 20, MaxResponseSize: 1 << 20, MaxResponseSizeCached: 4096, MaxOperations: 16, MaxRequests: 4}
	res = compound4(t, c, &nfs4.CreateSessionArgs{ClientID: ex.ClientID, Sequence: ex.SequenceID, ForeChanAttrs: fore,
		BackChanAttrs: nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1}})
	sid := res.Results[0].(*nfs4.CreateSessionRes).SessionID
	compound4(t, c, &nfs4.SequenceArgs{SessionID: sid, SequenceID: 1}, &nfs4.ReclaimCompleteArgs{})
	ops := []nfs4.OpArgs{&nfs4.SequenceArgs{SessionID: sid, SequenceID: 2}, &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}}
	for _, comp := range strings.Split(strings.Trim(exportPath, "/"), "/") {
		ops = append(ops, &nfs4.LookupArgs{ObjName: []byte(comp)})
	}
	ops = append(ops, &nfs4.OpenArgs{ShareAccess: nfs4.ShareAccessRead, Owner: nfs4.StateOwner4{ClientID: ex.ClientID, Owner: []byte("o")},
		Claim: nfs4.OpenClaim4{Claim: nfs4.ClaimNull, File: []byte("big")}},
		&nfs4.ReadArgs{Stateid: nfs4.Stateid4{Seqid: 1}, Count: 4096},
		&nfs4.GetattrArgs{AttrRequest: nfs4.NewBitmap(nfs4.AttrLeaseTime)})
	res = compound4(t, c, ops...)
	n := len(res.Results)
	if r := res.Results[n-2].(*nfs4.ReadRes); len(r.Data) != 4096 || r.EOF {
		t.Fatalf("READ: %d bytes, eof %v", len(r.Data), r.EOF)
	}
	return res.Results[n-1].(*nfs4.GetattrRes).Attr.LeaseTime
}

// TestRunServesNFS4: Run serves NFSv4.1 on its RDMA and TCP listeners beside NFSv3,
// with metrics on and off, with the lease time of Config.NFS4LeaseTime.
func TestRunServesNFS4(t *testing.T) {
	for i, metrics := range []string{"", "127.0.0.1:0"} {
		lease := time.Duration(17+i) * time.Second
		s := startHostileServer(t, Config{Metrics: metrics, NFS4LeaseTime: lease})
		dev := soft.New(soft.Config{})
		t.Cleanup(func() { dev.Close() })
		rrt, err := rpcrdma.Dial(context.Background(), dev, s.info.RDMA.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rrt.Close() })
		trt, err := oncrpc.DialTCP(context.Background(), s.info.TCP.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { trt.Close() })
		for _, rt := range []oncrpc.RoundTripper{rrt, trt} {
			if got := readBig4(t, rt, s.info.ExportPath, fmt.Sprintf("client %d %p", i, rt)); got != uint32(lease/time.Second) {
				t.Fatalf("lease_time %d, want %v", got, lease)
			}
		}
	}
}

package confproto

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// FuzzDecodeCall drives the service's argument decoder and ServeRPC with arbitrary
// CONF_RDMA arguments. Neither panics; DecodeCall fails only with ErrTruncated,
// ErrTrailing or a *ValueError; what it accepts is exactly 12 bytes that re-encode
// identically and validate; ServeRPC answers those with the 12-byte reply and
// everything else with an error wrapping oncrpc.ErrGarbageArgs.
// Seeds (testdata/fuzz/FuzzDecodeCall): one per rule of DecodeCall.
func FuzzDecodeCall(f *testing.F) {
	svc, err := NewService(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeCall(b)
		var ve *ValueError
		switch {
		case err == nil:
			if len(b) != ReqSize || !bytes.Equal(r.AppendXDR(nil), b) {
				t.Fatalf("accepted %x as %+v", b, r)
			}
			if verr := r.Validate(); verr != nil {
				t.Fatalf("accepted an invalid request: %v", verr)
			}
		case errors.Is(err, ErrTruncated):
			if len(b) >= ReqSize {
				t.Fatalf("%d bytes reported truncated: %v", len(b), err)
			}
		case errors.Is(err, ErrTrailing):
			if len(b) <= ReqSize {
				t.Fatalf("%d bytes reported trailing: %v", len(b), err)
			}
		case errors.As(err, &ve):
			if len(b) != ReqSize {
				t.Fatalf("%d bytes reported invalid: %v", len(b), err)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}

		d := xdr.NewDecoder(b)
		var e xdr.Encoder
		req := &oncrpc.Request{Header: oncrpc.CallHeader{Prog: Program, Vers: Version, Proc: ProcConfRDMA}, Args: d, Netid: "tcp"}
		serr := svc.ServeRPC(context.Background(), req, &e)
		if err == nil {
			if serr != nil || e.Len() != ReplySize {
				t.Fatalf("ServeRPC of a valid request: %v, %d reply bytes", serr, e.Len())
			}
			var rep ConfigRDMAReply
			if _, derr := rep.DecodeXDR(e.Bytes()); derr != nil || rep != svc.Reply(r) {
				t.Fatalf("reply %x: %+v %v", e.Bytes(), rep, derr)
			}
		} else if !errors.Is(serr, oncrpc.ErrGarbageArgs) || e.Len() != 0 {
			t.Fatalf("ServeRPC of a bad request: %v, %d reply bytes", serr, e.Len())
		}
	})
}

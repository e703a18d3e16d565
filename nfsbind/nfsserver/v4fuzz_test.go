//go:build linux

package nfsserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// v4Harness calls a Server's NFSv4.1 COMPOUND handler in process, as a client at
// 127.0.0.1 with uid 1000, on an export whose path is "/" (so PUTROOTFH is the
// export root), in one session whose slot 0 it sequences itself, of a client that has
// sent RECLAIM_COMPLETE.
type v4Harness struct {
	srv  *Server
	h    oncrpc.Handler
	sid  nfs4.SessionID
	seq  uint32
	cred oncrpc.AuthSysParams
}

func newV4Harness(t testing.TB) *v4Harness {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("some data in "+n), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(dir, n), 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o777); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Root: dir, ExportPath: "/", HandleKey: fuzzKey, MaxIO: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hh := &v4Harness{srv: srv, h: srv.NFS4Handler(), cred: oncrpc.AuthSysParams{UID: 1000, GID: 1000}}
	res, err := hh.call(hh.encode(nil, &nfs4.ExchangeIDArgs{ClientOwner: nfs4.ClientOwner4{OwnerID: []byte("fuzz")}}))
	if err != nil {
		t.Fatal(err)
	}
	ex := res.Results[0].(*nfs4.ExchangeIDRes)
	res, err = hh.call(hh.encode(nil, &nfs4.CreateSessionArgs{ClientID: ex.ClientID, Sequence: ex.SequenceID, ForeChanAttrs: defaultFore,
		BackChanAttrs: nfs4.ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1}}))
	if err != nil || res.Status != nfs4.OK {
		t.Fatalf("CREATE_SESSION: %v %v", err, res)
	}
	hh.sid = res.Results[0].(*nfs4.CreateSessionRes).SessionID
	hh.seq++
	res, err = hh.call(hh.encode(nil, &nfs4.SequenceArgs{SessionID: hh.sid, SequenceID: hh.seq}, &nfs4.ReclaimCompleteArgs{}))
	if err != nil || res.Status != nfs4.OK {
		t.Fatalf("RECLAIM_COMPLETE: %v %v", err, res)
	}
	return hh
}

// encode returns COMPOUND4args of ops.
func (h *v4Harness) encode(tag []byte, ops ...nfs4.OpArgs) []byte {
	var e xdr.Encoder
	(&nfs4.CompoundArgs{Tag: tag, MinorVersion: 1, Ops: ops}).EncodeXDR(&e)
	return xdr.Flatten(nil, e.Bytes(), e.Payloads())
}

// inSession returns COMPOUND4args of the next SEQUENCE followed by n operations whose
// encoding is ops (as a client would append them, possibly garbage).
func (h *v4Harness) inSession(n uint8, ops []byte) []byte {
	h.seq++
	var e xdr.Encoder
	e.Opaque(nil)
	e.Uint32(1)
	e.Uint32(uint32(n) + 1)
	e.Uint32(uint32(nfs4.OpSequence))
	(&nfs4.SequenceArgs{SessionID: h.sid, SequenceID: h.seq}).EncodeXDR(&e)
	return append(e.Bytes(), ops...)
}

// call runs COMPOUND4args args and decodes the reply as a client would. A nil result
// with a nil error means the handler refused the call (GARBAGE_ARGS and the like).
func (h *v4Harness) call(args []byte) (*nfs4.CompoundRes, error) {
	cred := h.cred
	req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: nfs4.ProcCompound}, Args: xdr.NewDecoder(args), AuthSys: &cred, Netid: "tcp",
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 700}}
	var e xdr.Encoder
	if err := h.h.ServeRPC(context.Background(), req, &e); err != nil {
		return nil, nil
	}
	var res nfs4.CompoundRes
	if err := res.DecodeXDR(xdr.NewDecoder(xdr.Flatten(nil, e.Bytes(), e.Payloads()))); err != nil {
		return nil, fmt.Errorf("reply does not decode: %w", err)
	}
	return &res, nil
}

// opBytes encodes ops without a COMPOUND header.
func opBytes(ops ...nfs4.OpArgs) []byte {
	var e xdr.Encoder
	for _, o := range ops {
		e.Uint32(uint32(o.Op()))
		o.EncodeXDR(&e)
	}
	return xdr.Flatten(nil, e.Bytes(), e.Payloads())
}

// v4FuzzSeeds are operation lists a client sends after SEQUENCE.
func v4FuzzSeeds() map[string]struct {
	n   uint8
	ops []byte
} {
	root := &nfs4.NoArgs{OpNum: nfs4.OpPutrootfh}
	getfh := &nfs4.NoArgs{OpNum: nfs4.OpGetfh}
	open := &nfs4.OpenArgs{ShareAccess: nfs4.ShareAccessBoth, Owner: nfs4.StateOwner4{Owner: []byte("o")},
		OpenType: nfs4.Open4Create, How: nfs4.CreateHow4{Mode: nfs4.Unchecked4, Mask: nfs4.NewBitmap(nfs4.AttrMode), Attrs: nfs4.Fattr{Mode: 0o600}},
		Claim: nfs4.OpenClaim4{Claim: nfs4.ClaimNull, File: []byte("new")}}
	cur := nfs4.Stateid4{Seqid: 1}
	all := nfs4.SupportedAttrs().AndNot(nfs4.WriteOnlyAttrs()) // every attribute there is to read
	seeds := map[string][]nfs4.OpArgs{
		"root-getfh":      {root, getfh},
		"lookup-getattr":  {root, &nfs4.LookupArgs{ObjName: []byte("a")}, &nfs4.GetattrArgs{AttrRequest: all}},
		"open-write-read": {root, open, &nfs4.WriteArgs{Stateid: cur, Data: []byte("hello")}, &nfs4.ReadArgs{Stateid: cur, Count: 10}, &nfs4.CloseArgs{OpenStateid: cur}},
		"readdir":         {root, &nfs4.ReaddirArgs{DirCount: 4096, MaxCount: 8192, AttrRequest: all}},
		"rename-link":     {root, &nfs4.NoArgs{OpNum: nfs4.OpSavefh}, &nfs4.RenameArgs{OldName: []byte("a"), NewName: []byte("c")}, &nfs4.LookupArgs{ObjName: []byte("b")}, &nfs4.NoArgs{OpNum: nfs4.OpSavefh}, root, &nfs4.NameArgs{OpNum: nfs4.OpLink, Name: []byte("b2")}},
		"create-remove":   {root, &nfs4.CreateArgs{ObjType: nfs4.NF4Lnk, LinkData: []byte("a"), ObjName: []byte("l")}, &nfs4.NoArgs{OpNum: nfs4.OpReadlink}, root, &nfs4.NameArgs{OpNum: nfs4.OpRemove, Name: []byte("l")}},
		"setattr":         {root, &nfs4.LookupArgs{ObjName: []byte("b")}, &nfs4.SetattrArgs{Mask: nfs4.NewBitmap(nfs4.AttrSize, nfs4.AttrOwner), Attr: nfs4.Fattr{Size: 3, Owner: []byte("1000")}}},
		"lock":            {root, open, &nfs4.LockArgs{LockType: nfs4.WriteLT, Length: 10, Locker: nfs4.Locker4{NewLockOwner: true, OpenStateid: cur, LockOwner: nfs4.StateOwner4{Owner: []byte("l")}}}, &nfs4.LocktArgs{LockType: nfs4.WriteLT, Length: 1, Owner: nfs4.StateOwner4{Owner: []byte("m")}}},
		"verify-access":   {root, &nfs4.VerifyArgs{OpNum: nfs4.OpNverify, Attrs: nfs4.Fattr4{Mask: nfs4.NewBitmap(nfs4.AttrType), Vals: []byte{0, 0, 0, 1}}}, &nfs4.AccessArgs{Access: 0x3f}},
		"secinfo-lookupp": {root, &nfs4.LookupArgs{ObjName: []byte("d")}, &nfs4.NoArgs{OpNum: nfs4.OpLookupp}, &nfs4.SecinfoNoNameArgs{}},
		"teststateid":     {&nfs4.TestStateidArgs{Stateids: []nfs4.Stateid4{cur, {}}}, &nfs4.StateidArgs{OpNum: nfs4.OpFreeStateid}},
	}
	out := map[string]struct {
		n   uint8
		ops []byte
	}{}
	for name, ops := range seeds {
		out[name] = struct {
			n   uint8
			ops []byte
		}{uint8(len(ops)), opBytes(ops...)}
	}
	out["garbage"] = struct {
		n   uint8
		ops []byte
	}{200, []byte{0, 0, 0, 22, 0xff, 0xff, 0xff, 0xff}}
	return out
}

// FuzzV4Compound runs arbitrary operations in a session against a real export: the
// server never panics, always answers with a COMPOUND4res a client decodes, holding
// at most one result per operation run, whose status is the last result's and
// NFS4_OK only when every result is.
func FuzzV4Compound(f *testing.F) {
	for _, s := range v4FuzzSeeds() {
		f.Add(s.n, s.ops)
	}
	h := newV4Harness(f)
	f.Fuzz(func(t *testing.T, n uint8, ops []byte) {
		// Claim no more operations than the bytes can hold (4 each at least), so
		// that mutated inputs reach the operations rather than GARBAGE_ARGS.
		n = uint8(min(int(n), len(ops)/4))
		res, err := h.call(h.inSession(n, ops))
		if err != nil {
			t.Fatal(err)
		}
		if res == nil {
			return
		}
		if len(res.Results) > int(n)+1 {
			t.Fatalf("%d results for %d operations", len(res.Results), int(n)+1)
		}
		for i, r := range res.Results {
			if r.Result() != nfs4.OK && i != len(res.Results)-1 {
				t.Fatalf("result %d (%v) failed with %v but the COMPOUND went on", i, r.Op(), r.Result())
			}
		}
		if k := len(res.Results); k > 0 && res.Results[k-1].Result() != res.Status {
			t.Fatalf("COMPOUND status %v, last result %v", res.Status, res.Results[k-1].Result())
		}
	})
}

// TestV4FuzzSeeds runs each seed on a fresh export and checks its outcome: the
// well-formed ones succeed, or fail where they should.
func TestV4FuzzSeeds(t *testing.T) {
	want := map[string]nfs4.Status{
		"lock":        nfs4.ErrDenied,     // LOCKT by another owner meets the LOCK
		"teststateid": nfs4.ErrBadStateid, // FREE_STATEID of the anonymous stateid
	}
	for name, s := range v4FuzzSeeds() {
		h := newV4Harness(t)
		res, err := h.call(h.inSession(s.n, s.ops))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "garbage" {
			if res != nil {
				t.Errorf("garbage: answered %v, want GARBAGE_ARGS", res.Status)
			}
			continue
		}
		if res == nil || res.Status != want[name] {
			t.Errorf("%s: %+v, want %v", name, res, want[name])
		}
	}
}

// TestWriteV4Corpus regenerates FuzzV4Compound's seed corpus when
// NFSSERVER_WRITE_CORPUS=1.
func TestWriteV4Corpus(t *testing.T) {
	if os.Getenv("NFSSERVER_WRITE_CORPUS") != "1" {
		t.Skip("set NFSSERVER_WRITE_CORPUS=1 to regenerate testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzV4Compound")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range v4FuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\nuint8(%d)\n[]byte(%q)\n", s.n, s.ops)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

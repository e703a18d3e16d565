package nfs4

import (
	"bytes"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Byte layouts derived by hand from RFC 8881's XDR (§18.46 SEQUENCE4args, §18.22
// READ4args/READ4resok, §18.32 WRITE4args, §18.35 EXCHANGE_ID4args, §18.16 OPEN4args,
// §18.36 CREATE_SESSION4resok), independent of the encoder: each vector is compared with
// the encoder's output and decoded back.
func TestGoldenVectors(t *testing.T) {
	sid := []byte{0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xaf}
	other := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	u32 := func(v uint32) []byte { return xdr.AppendUint32(nil, v) }
	cases := []struct {
		name  string
		msg   Message
		fresh func() Message
		want  []byte
	}{
		{"SEQUENCE4args", &SequenceArgs{SessionID: testSession, SequenceID: 17, SlotID: 3, HighestSlotID: 9, CacheThis: true},
			func() Message { return &SequenceArgs{} },
			cat(sid, u32(17), u32(3), u32(9), u32(1))},
		{"READ4args", &ReadArgs{Stateid: testStateid, Offset: 0x0000000100000002, Count: 65536},
			func() Message { return &ReadArgs{} },
			cat(u32(3), other, []byte{0, 0, 0, 1, 0, 0, 0, 2}, u32(65536))},
		{"READ4res", &ReadRes{EOF: true, Data: []byte("abcde")},
			func() Message { return &ReadRes{} },
			cat(u32(0), u32(1), u32(5), []byte("abcde\x00\x00\x00"))},
		{"WRITE4args", &WriteArgs{Stateid: testStateid, Offset: 8, Stable: DataSync4, Data: []byte("xy")},
			func() Message { return &WriteArgs{} },
			cat(u32(3), other, []byte{0, 0, 0, 0, 0, 0, 0, 8}, u32(1), u32(2), []byte("xy\x00\x00"))},
		{"EXCHANGE_ID4args", &ExchangeIDArgs{ClientOwner: ClientOwner4{Verifier: Verifier{1, 2, 3, 4, 5, 6, 7, 8}, OwnerID: []byte("host")},
			Flags: ExchgIDFlagSuppMovedRefer | ExchgIDFlagSuppMovedMigr | ExchgIDFlagBindPrincStateid, StateProtect: StateProtect4{How: SP4None}},
			func() Message { return &ExchangeIDArgs{} },
			cat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, u32(4), []byte("host"), u32(0x103), u32(0), u32(0))},
		{"OPEN4args CLAIM_NULL NOCREATE", &OpenArgs{ShareAccess: ShareAccessRead | ShareAccessWantNoDeleg,
			ShareDeny: ShareDenyNone, Owner: StateOwner4{ClientID: 0x0102030405060708, Owner: []byte("ow")},
			OpenType: Open4NoCreate, Claim: OpenClaim4{Claim: ClaimNull, File: []byte("f")}},
			func() Message { return &OpenArgs{} },
			cat(u32(0), u32(0x401), u32(0), []byte{1, 2, 3, 4, 5, 6, 7, 8}, u32(2), []byte("ow\x00\x00"),
				u32(0), u32(0), u32(1), []byte("f\x00\x00\x00"))},
		{"CREATE_SESSION4res", &CreateSessionRes{SessionID: testSession, Sequence: 1, Flags: CreateSessionFlagConnBackChan,
			ForeChanAttrs: ChannelAttrs4{MaxRequestSize: 1049620, MaxResponseSize: 1049480, MaxResponseSizeCached: 7584, MaxOperations: 8, MaxRequests: 30},
			BackChanAttrs: ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 16, HasRdmaIrd: true, RdmaIrd: 0}},
			func() Message { return &CreateSessionRes{} },
			cat(u32(0), sid, u32(1), u32(2),
				u32(0), u32(1049620), u32(1049480), u32(7584), u32(8), u32(30), u32(0),
				u32(0), u32(4096), u32(4096), u32(0), u32(2), u32(16), u32(1), u32(0))},
	}
	for _, c := range cases {
		if got := encode(c.msg); !bytes.Equal(got, c.want) {
			t.Errorf("%s: encoded\n% x\nwant\n% x", c.name, got, c.want)
			continue
		}
		m := c.fresh()
		d := xdr.NewDecoder(c.want)
		if err := m.DecodeXDR(d); err != nil || d.Len() != 0 {
			t.Errorf("%s: decode: %v (%d left)", c.name, err, d.Len())
			continue
		}
		if show(m) != show(c.msg) {
			t.Errorf("%s: decoded %s", c.name, show(m))
		}
	}
}

// Length bounds: every counted item past its limit is refused with NFS4ERR_BADXDR
// before anything is sliced.
func TestLengthBounds(t *testing.T) {
	over := func(n int) []byte { return make([]byte, n+1) }
	cases := []struct {
		name string
		msg  OpArgs
	}{
		{"PUTFH object > NFS4_FHSIZE", &PutfhArgs{Object: over(FHSize)}},
		{"client owner > NFS4_OPAQUE_LIMIT", &ExchangeIDArgs{ClientOwner: ClientOwner4{OwnerID: over(OpaqueLimit)}}},
		{"open owner > NFS4_OPAQUE_LIMIT", &OpenArgs{Owner: StateOwner4{Owner: over(OpaqueLimit)}}},
		{"lock owner > NFS4_OPAQUE_LIMIT", &LockArgs{LockType: ReadLT, Locker: Locker4{NewLockOwner: true, LockOwner: StateOwner4{Owner: over(OpaqueLimit)}}}},
		{"LOCKT owner > NFS4_OPAQUE_LIMIT", &LocktArgs{LockType: ReadLT, Owner: StateOwner4{Owner: over(OpaqueLimit)}}},
		{"LOOKUP name > MaxComponent", &LookupArgs{ObjName: over(MaxComponent)}},
		{"symlink text > MaxLinkData", &CreateArgs{ObjType: NF4Lnk, LinkData: over(MaxLinkData)}},
		{"WRITE data > MaxData", &WriteArgs{Data: over(MaxData)}},
		{"TEST_STATEID > MaxStateids", &TestStateidArgs{Stateids: make([]Stateid4, MaxStateids+1)}},
		{"sec_parms > MaxSecFlavors", &CreateSessionArgs{SecParms: make([]CallbackSecParms4, MaxSecFlavors+1)}},
		{"GETATTR bitmap > MaxBitmapWords", &GetattrArgs{AttrRequest: make(Bitmap4, MaxBitmapWords+1)}},
	}
	for _, c := range cases {
		in := encode(c.msg)
		a, _ := NewArgs(c.msg.Op())
		err := a.DecodeXDR(xdr.NewDecoder(in))
		if err == nil || StatusOf(err) != ErrBadxdr || !typedErr(err) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// At the limit, the same items decode.
	at := []OpArgs{&PutfhArgs{Object: make(FH, FHSize)}, &ExchangeIDArgs{ClientOwner: ClientOwner4{OwnerID: make([]byte, OpaqueLimit)}}}
	for _, m := range at {
		a, _ := NewArgs(m.Op())
		if err := a.DecodeXDR(xdr.NewDecoder(encode(m))); err != nil {
			t.Errorf("%v at the limit: %v", m.Op(), err)
		}
	}
}

// SP4_SSV state protection and RPCSEC_GSS callback security are well formed but not
// offered: the first is refused while decoding with the status a server answers, the
// second decoded for the server to refuse.
func TestRefusedSecurity(t *testing.T) {
	in := encode(&ExchangeIDArgs{ClientOwner: ClientOwner4{OwnerID: []byte("x")}})
	in = append(in[:len(in)-8], 0, 0, 0, 2, 0, 0, 0, 0) // spa_how = SP4_SSV
	var a ExchangeIDArgs
	if err := a.DecodeXDR(xdr.NewDecoder(in)); StatusOf(err) != ErrEncrAlgUnsupp {
		t.Errorf("SP4_SSV: %v", err)
	}
	cs := CreateSessionArgs{SecParms: []CallbackSecParms4{{Flavor: RPCSecGSS, GSS: GSSCBHandles{Service: RPCGSSSvcNone}}}}
	var got CreateSessionArgs
	if err := got.DecodeXDR(xdr.NewDecoder(encode(&cs))); err != nil || got.SecParms[0].Flavor != RPCSecGSS {
		t.Errorf("RPCSEC_GSS: %v", err)
	}
	in = encode(&CreateSessionArgs{SecParms: []CallbackSecParms4{{Flavor: 3}}})
	if err := got.DecodeXDR(xdr.NewDecoder(in)); StatusOf(err) != ErrBadxdr || err == nil {
		t.Errorf("flavor 3: %v", err)
	}
}

package nfs4

import (
	"bytes"
	"testing"

	godxdr "github.com/davecgh/go-xdr/xdr2"
)

// Structures cross-checked against github.com/davecgh/go-xdr, an independent
// reflection-based XDR encoder (used only in tests): each ref* type spells out an RFC
// 8881 structure field by field, with unions written as the arm that is present.

type refStateid struct {
	Seqid uint32
	Other [12]byte
}

type refTime struct {
	Seconds  int64
	Nseconds uint32
}

type refChannelAttrs struct {
	HeaderPad, MaxReq, MaxResp, MaxRespCached, MaxOps, MaxReqs uint32
	RdmaIrd                                                    []uint32
}

type refImplID struct {
	Domain, Name string
	Date         refTime
}

func refBytes(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := godxdr.Marshal(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func refChan(c ChannelAttrs4) refChannelAttrs {
	r := refChannelAttrs{c.HeaderPadSize, c.MaxRequestSize, c.MaxResponseSize, c.MaxResponseSizeCached, c.MaxOperations, c.MaxRequests, []uint32{}}
	if c.HasRdmaIrd {
		r.RdmaIrd = []uint32{c.RdmaIrd}
	}
	return r
}

func TestCrossCheckGoXDR(t *testing.T) {
	st := refStateid(testStateid)
	check := func(name string, m Message, ref any) {
		t.Helper()
		if got, want := encode(m), refBytes(t, ref); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %x\nwant %x", name, got, want)
		}
	}

	seq := SequenceArgs{SessionID: testSession, SequenceID: 17, SlotID: 3, HighestSlotID: 9, CacheThis: true}
	check("SEQUENCE4args", &seq, struct {
		S                  [16]byte
		Seq, Slot, Highest uint32
		CacheThis          bool
	}{testSession, 17, 3, 9, true})

	sr := SequenceRes{SessionID: testSession, SequenceID: 17, SlotID: 3, HighestSlotID: 9, TargetHighestSlotID: 31, StatusFlags: Seq4StatusCBPathDown | Seq4StatusRestartReclaimNeeded}
	check("SEQUENCE4res", &sr, struct {
		Status                         uint32
		S                              [16]byte
		Seq, Slot, Highest, Target, Fl uint32
	}{0, testSession, 17, 3, 9, 31, 0x101})

	ex := ExchangeIDArgs{ClientOwner: ClientOwner4{Verifier: Verifier{8, 7, 6, 5, 4, 3, 2, 1}, OwnerID: []byte("Linux NFSv4.1 client")},
		Flags: ExchgIDFlagSuppMovedRefer | ExchgIDFlagBindPrincStateid, StateProtect: StateProtect4{How: SP4None},
		HasImplID: true, ImplID: NFSImplID4{Domain: []byte("kernel.org"), Name: []byte("Linux"), Date: NFSTime4{Seconds: 1700000000, Nseconds: 3}}}
	check("EXCHANGE_ID4args", &ex, struct {
		Verf  [8]byte
		Owner []byte
		Flags uint32
		How   uint32
		Impl  []refImplID
	}{ex.ClientOwner.Verifier, ex.ClientOwner.OwnerID, ex.Flags, 0, []refImplID{{"kernel.org", "Linux", refTime{1700000000, 3}}}})

	exr := ExchangeIDRes{ClientID: 0xfeedface01020304, SequenceID: 1, Flags: ExchgIDFlagUseNonPNFS | ExchgIDFlagConfirmedR,
		StateProtect: StateProtect4{How: SP4MachCred, MachOps: StateProtectOps4{MustEnforce: Bitmap4{1 << 10}, MustAllow: Bitmap4{}}},
		ServerOwner:  ServerOwner4{MinorID: 0, MajorID: []byte("srv")}, ServerScope: []byte("scope")}
	check("EXCHANGE_ID4res", &exr, struct {
		Status         uint32
		ClientID       uint64
		Seq, Flags     uint32
		How            uint32
		Enforce, Allow []uint32
		Minor          uint64
		Major, Scope   []byte
		Impl           []refImplID
	}{0, exr.ClientID, 1, exr.Flags, 1, []uint32{1 << 10}, []uint32{}, 0, []byte("srv"), []byte("scope"), []refImplID{}})

	fore := ChannelAttrs4{MaxRequestSize: 1049620, MaxResponseSize: 1049480, MaxResponseSizeCached: 7584, MaxOperations: 8, MaxRequests: 30}
	back := ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 16, HasRdmaIrd: true, RdmaIrd: 2}
	cs := CreateSessionArgs{ClientID: 9, Sequence: 1, Flags: CreateSessionFlagConnBackChan | CreateSessionFlagConnRDMA, ForeChanAttrs: fore, BackChanAttrs: back,
		CBProgram: 0x40000000, SecParms: []CallbackSecParms4{{Flavor: AuthNone}, {Flavor: AuthNone}}}
	check("CREATE_SESSION4args", &cs, struct {
		ClientID   uint64
		Seq, Flags uint32
		Fore, Back refChannelAttrs
		Prog       uint32
		Flavors    []uint32 // AUTH_NONE arms are void
	}{9, 1, 6, refChan(fore), refChan(back), 0x40000000, []uint32{0, 0}})

	op := OpenArgs{ShareAccess: ShareAccessBoth, ShareDeny: ShareDenyWrite, Owner: StateOwner4{ClientID: 77, Owner: []byte("open id:00000001")},
		OpenType: Open4Create, How: CreateHow4{Mode: Exclusive41, CreateVerf: Verifier{1, 2, 3, 4, 5, 6, 7, 8}, Mask: NewBitmap(AttrMode), Attrs: Fattr{Mode: 0o640}},
		Claim: OpenClaim4{Claim: ClaimNull, File: []byte("new-file")}}
	check("OPEN4args EXCLUSIVE4_1", &op, struct {
		Seqid, Access, Deny uint32
		ClientID            uint64
		Owner               []byte
		OpenType, Mode      uint32
		Verf                [8]byte
		Mask                []uint32
		Vals                []byte
		Claim               uint32
		File                string
	}{0, 3, 2, 77, op.Owner.Owner, 1, 3, op.How.CreateVerf, []uint32{0, 1 << (33 - 32)}, []byte{0, 0, 1, 0xa0}, 0, "new-file"})

	orr := OpenRes{Stateid: testStateid, Cinfo: ChangeInfo4{Atomic: true, Before: 10, After: 11}, Rflags: Open4ResultLocktypePosix,
		AttrSet: NewBitmap(AttrMode), Delegation: OpenDelegation4{Type: DelegateNoneExt, WhyNone: WNDResource, WillPushOrSignal: false}}
	check("OPEN4res NONE_EXT", &orr, struct {
		Status        uint32
		St            refStateid
		Atomic        bool
		Before, After uint64
		Rflags        uint32
		AttrSet       []uint32
		Type, Why     uint32
		Signal        bool
	}{0, st, true, 10, 11, 4, []uint32{0, 2}, 3, 2, false})

	lk := LockArgs{LockType: WriteLT, Offset: 0, Length: ^uint64(0), Locker: Locker4{NewLockOwner: true, OpenStateid: testStateid,
		LockOwner: StateOwner4{ClientID: 77, Owner: []byte("lock id:1")}}}
	check("LOCK4args new owner", &lk, struct {
		Type           uint32
		Reclaim        bool
		Offset, Length uint64
		New            bool
		OpenSeqid      uint32
		OpenStateid    refStateid
		LockSeqid      uint32
		ClientID       uint64
		Owner          []byte
	}{2, false, 0, ^uint64(0), true, 0, st, 0, 77, []byte("lock id:1")})

	ld := LockRes{OpNum: OpLock, Status: ErrDenied, Denied: LockDenied4{Offset: 5, Length: 10, LockType: ReadLT, Owner: StateOwner4{ClientID: 3, Owner: []byte("x")}}}
	check("LOCK4res DENIED", &ld, struct {
		Status         uint32
		Offset, Length uint64
		Type           uint32
		ClientID       uint64
		Owner          []byte
	}{uint32(ErrDenied), 5, 10, 1, 3, []byte("x")})

	wr := WriteArgs{Stateid: testStateid, Offset: 1 << 33, Stable: FileSync4, Data: []byte("seven b")}
	check("WRITE4args", &wr, struct {
		St     refStateid
		Offset uint64
		Stable uint32
		Data   []byte
	}{st, 1 << 33, 2, []byte("seven b")})

	rd := ReadRes{EOF: true, Data: []byte("12345")}
	check("READ4res", &rd, struct {
		Status uint32
		EOF    bool
		Data   []byte
	}{0, true, []byte("12345")})

	rda := ReaddirArgs{Cookie: 12, CookieVerf: Verifier{1}, DirCount: 4096, MaxCount: 32768, AttrRequest: Bitmap4{0x0010011a, 0x00b0a23a}}
	check("READDIR4args", &rda, struct {
		Cookie             uint64
		Verf               [8]byte
		DirCount, MaxCount uint32
		Attrs              []uint32
	}{12, rda.CookieVerf, 4096, 32768, []uint32{0x0010011a, 0x00b0a23a}})

	// A GETATTR result: attr_vals is itself an XDR stream, encoded separately.
	ga := GetattrRes{Mask: NewBitmap(AttrType, AttrSize, AttrMode, AttrOwner, AttrTimeModify),
		Attr: Fattr{Type: NF4Dir, Size: 4096, Mode: 0o755, Owner: []byte("root"), TimeModify: NFSTime4{Seconds: -5, Nseconds: 6}}}
	vals := refBytes(t, struct {
		Type  uint32
		Size  uint64
		Mode  uint32
		Owner string
		Mtime refTime
	}{2, 4096, 0o755, "root", refTime{-5, 6}})
	check("GETATTR4res", &ga, struct {
		Status uint32
		Mask   []uint32
		Vals   []byte
	}{0, []uint32{1<<1 | 1<<4, 1<<(33-32) | 1<<(36-32) | 1<<(53-32)}, vals})

	cb := CBSequenceArgs{SessionID: testSession, SequenceID: 2, SlotID: 0, HighestSlotID: 0, CacheThis: false,
		ReferringCallLists: []ReferringCallList4{{SessionID: testSession, Calls: []ReferringCall4{{SequenceID: 5, SlotID: 1}, {SequenceID: 6, SlotID: 2}}}}}
	type refCall struct{ Seq, Slot uint32 }
	type refList struct {
		S     [16]byte
		Calls []refCall
	}
	check("CB_SEQUENCE4args", &cb, struct {
		S                  [16]byte
		Seq, Slot, Highest uint32
		CacheThis          bool
		Lists              []refList
	}{testSession, 2, 0, 0, false, []refList{{testSession, []refCall{{5, 1}, {6, 2}}}}})

	rc := CBRecallArgs{Stateid: testStateid, Truncate: true, FH: testFH}
	check("CB_RECALL4args", &rc, struct {
		St       refStateid
		Truncate bool
		FH       []byte
	}{st, true, []byte(testFH)})
}

package nfs4

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

var (
	testFH      = FH{0x01, 0x00, 0x07, 0x01, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x2a}
	testStateid = Stateid4{Seqid: 3, Other: [OtherSize]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	testSession = SessionID{0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xaf}
	testChan    = ChannelAttrs4{HeaderPadSize: 0, MaxRequestSize: 1 << 20, MaxResponseSize: 1 << 20,
		MaxResponseSizeCached: 4096, MaxOperations: 16, MaxRequests: 64}
	testAttrMask = NewBitmap(AttrType, AttrChange, AttrSize, AttrFSID, AttrFileid, AttrMode,
		AttrNumlinks, AttrOwner, AttrOwnerGroup, AttrSpaceUsed, AttrTimeAccess, AttrTimeMetadata,
		AttrTimeModify, AttrMountedOnFileid)
	testAttr = Fattr{Type: NF4Reg, Change: 77, Size: 12345, FSID: FSID4{Major: 1, Minor: 2},
		Fileid: 99, Mode: 0o644, Numlinks: 1, Owner: []byte("1000"), OwnerGroup: []byte("100"),
		SpaceUsed: 16384, TimeAccess: NFSTime4{Seconds: 1700000000, Nseconds: 5},
		TimeMetadata: NFSTime4{Seconds: -1, Nseconds: 999999999}, TimeModify: NFSTime4{Seconds: 3},
		MountedOnFileid: 99}
	setMask = NewBitmap(AttrSize, AttrMode, AttrOwner, AttrTimeAccessSet, AttrTimeModifySet)
	setAttr = Fattr{Size: 0, Mode: 0o600, Owner: []byte("root@example"),
		TimeAccessSet: SetTime4{How: SetToServerTime4},
		TimeModifySet: SetTime4{How: SetToClientTime4, Time: NFSTime4{Seconds: 42, Nseconds: 7}}}
	sysCred = CallbackSecParms4{Flavor: AuthSys, Sys: AuthSysParms{Stamp: 9, MachineName: []byte("client"), UID: 0, GID: 0, GIDs: []uint32{1, 2}}}
)

// sampleArgs returns a populated argument value for every operation this package
// decodes, some in more than one shape.
func sampleArgs() []OpArgs {
	return []OpArgs{
		&ExchangeIDArgs{ClientOwner: ClientOwner4{Verifier: Verifier{1, 2, 3, 4, 5, 6, 7, 8}, OwnerID: []byte("Linux NFSv4.1 host")},
			Flags: ExchgIDFlagSuppMovedRefer | ExchgIDFlagBindPrincStateid, StateProtect: StateProtect4{How: SP4None},
			HasImplID: true, ImplID: NFSImplID4{Domain: []byte("kernel.org"), Name: []byte("Linux 6.8"), Date: NFSTime4{Seconds: 1}}},
		&ExchangeIDArgs{ClientOwner: ClientOwner4{OwnerID: []byte("x")},
			StateProtect: StateProtect4{How: SP4MachCred, MachOps: StateProtectOps4{MustEnforce: Bitmap4{1 << 10, 1 << (53 - 32)}, MustAllow: Bitmap4{0}}}},
		&CreateSessionArgs{ClientID: 0x1122334455667788, Sequence: 1, Flags: CreateSessionFlagConnBackChan,
			ForeChanAttrs: testChan, BackChanAttrs: ChannelAttrs4{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1, HasRdmaIrd: true, RdmaIrd: 4},
			CBProgram: 0x40000000, SecParms: []CallbackSecParms4{{Flavor: AuthNone}, sysCred,
				{Flavor: RPCSecGSS, GSS: GSSCBHandles{Service: RPCGSSSvcIntegrity, HandleFromServer: []byte{1}, HandleFromClient: []byte{2, 3}}}}},
		&DestroySessionArgs{SessionID: testSession},
		&DestroyClientIDArgs{ClientID: 7},
		&BindConnToSessionArgs{SessionID: testSession, Dir: CDFC4BackOrBoth, UseConnInRDMAMode: true},
		&SequenceArgs{SessionID: testSession, SequenceID: 17, SlotID: 3, HighestSlotID: 9, CacheThis: true},
		&ReclaimCompleteArgs{OneFS: true},
		&SecinfoNoNameArgs{Style: SecinfoStyleParent},
		&SecinfoArgs{Name: []byte("export")},
		&TestStateidArgs{Stateids: []Stateid4{testStateid, BypassStateid}},
		&StateidArgs{OpNum: OpFreeStateid, Stateid: testStateid},
		&StateidArgs{OpNum: OpDelegreturn, Stateid: testStateid},
		&BackchannelCtlArgs{CBProgram: 0x40000001, SecParms: []CallbackSecParms4{sysCred}},
		&PutfhArgs{Object: testFH},
		&NoArgs{OpNum: OpPutrootfh},
		&NoArgs{OpNum: OpPutpubfh},
		&NoArgs{OpNum: OpGetfh},
		&NoArgs{OpNum: OpSavefh},
		&NoArgs{OpNum: OpRestorefh},
		&NoArgs{OpNum: OpLookupp},
		&NoArgs{OpNum: OpReadlink},
		&LookupArgs{ObjName: []byte("file.txt")},
		&GetattrArgs{AttrRequest: testAttrMask},
		&SetattrArgs{Stateid: testStateid, Mask: setMask, Attr: setAttr},
		&VerifyArgs{OpNum: OpVerify, Attrs: Fattr4{Mask: NewBitmap(AttrSize), Vals: []byte{0, 0, 0, 0, 0, 0, 0, 9}}},
		&VerifyArgs{OpNum: OpNverify, Attrs: Fattr4{Mask: NewBitmap(AttrMode), Vals: []byte{0, 0, 1, 0xa4}}},
		&AccessArgs{Access: Access4Read | Access4Lookup | Access4Execute},
		&OpenArgs{Seqid: 0, ShareAccess: ShareAccessBoth | ShareAccessWantNoDeleg, ShareDeny: ShareDenyNone,
			Owner: StateOwner4{ClientID: 5, Owner: []byte("open id:\x00\x00\x00\x01")}, OpenType: Open4NoCreate,
			Claim: OpenClaim4{Claim: ClaimNull, File: []byte("a")}},
		&OpenArgs{ShareAccess: ShareAccessWrite, Owner: StateOwner4{ClientID: 5, Owner: []byte("o")}, OpenType: Open4Create,
			How: CreateHow4{Mode: Guarded4, Mask: NewBitmap(AttrMode), Attrs: Fattr{Mode: 0o600}}, Claim: OpenClaim4{Claim: ClaimFH}},
		&OpenArgs{ShareAccess: ShareAccessWrite, Owner: StateOwner4{ClientID: 5, Owner: []byte("o")}, OpenType: Open4Create,
			How: CreateHow4{Mode: Exclusive4, CreateVerf: Verifier{9, 9}}, Claim: OpenClaim4{Claim: ClaimPrevious, DelegateType: DelegateNone}},
		&OpenArgs{ShareAccess: ShareAccessRead, Owner: StateOwner4{ClientID: 5, Owner: []byte("o")}, OpenType: Open4Create,
			How:   CreateHow4{Mode: Exclusive41, CreateVerf: Verifier{1, 2, 3}, Mask: NewBitmap(AttrMode), Attrs: Fattr{Mode: 0o644}},
			Claim: OpenClaim4{Claim: ClaimDelegateCur, DelegateStateid: testStateid, File: []byte("b")}},
		&OpenArgs{ShareAccess: ShareAccessRead, Owner: StateOwner4{ClientID: 5, Owner: []byte("o")}, OpenType: Open4Create,
			How: CreateHow4{Mode: Unchecked4, Mask: NewBitmap(AttrSize), Attrs: Fattr{Size: 0}}, Claim: OpenClaim4{Claim: ClaimDelegatePrev, File: []byte("c")}},
		&OpenArgs{ShareAccess: ShareAccessRead, Owner: StateOwner4{Owner: []byte("o")}, Claim: OpenClaim4{Claim: ClaimDelegCurFH, DelegateStateid: testStateid}},
		&OpenArgs{ShareAccess: ShareAccessRead, Owner: StateOwner4{Owner: []byte("o")}, Claim: OpenClaim4{Claim: ClaimDelegPrevFH}},
		&OpenDowngradeArgs{OpenStateid: testStateid, Seqid: 0, ShareAccess: ShareAccessRead, ShareDeny: ShareDenyNone},
		&CloseArgs{Seqid: 0, OpenStateid: testStateid},
		&LockArgs{LockType: WriteLT, Offset: 0, Length: ^uint64(0), Locker: Locker4{NewLockOwner: true, OpenSeqid: 0,
			OpenStateid: testStateid, LockSeqid: 0, LockOwner: StateOwner4{ClientID: 5, Owner: []byte("lock id:1")}}},
		&LockArgs{LockType: ReadwLT, Reclaim: true, Offset: 100, Length: 10, Locker: Locker4{LockStateid: testStateid, LockSeqid: 2}},
		&LocktArgs{LockType: ReadLT, Offset: 1, Length: 2, Owner: StateOwner4{ClientID: 5, Owner: []byte("x")}},
		&LockuArgs{LockType: WriteLT, Seqid: 1, LockStateid: testStateid, Offset: 0, Length: ^uint64(0)},
		&ReleaseLockownerArgs{LockOwner: StateOwner4{ClientID: 5, Owner: []byte("x")}},
		&ReadArgs{Stateid: testStateid, Offset: 1 << 40, Count: 1 << 20},
		&WriteArgs{Stateid: AnonymousStateid, Offset: 4096, Stable: FileSync4, Data: []byte("hello, world")},
		&WriteArgs{Stateid: testStateid, Stable: Unstable4, Data: []byte("odd")},
		&CommitArgs{Offset: 0, Count: 0},
		&CreateArgs{ObjType: NF4Dir, ObjName: []byte("dir"), Mask: NewBitmap(AttrMode), Attrs: Fattr{Mode: 0o755}},
		&CreateArgs{ObjType: NF4Lnk, LinkData: []byte("../target"), ObjName: []byte("ln")},
		&CreateArgs{ObjType: NF4Chr, DevData: SpecData4{Major: 1, Minor: 3}, ObjName: []byte("null")},
		&NameArgs{OpNum: OpRemove, Name: []byte("gone")},
		&NameArgs{OpNum: OpLink, Name: []byte("hard")},
		&RenameArgs{OldName: []byte("old"), NewName: []byte("new")},
		&ReaddirArgs{Cookie: 3, CookieVerf: Verifier{7}, DirCount: 8192, MaxCount: 32768, AttrRequest: testAttrMask},
	}
}

// sampleRes returns populated results, NFS4_OK and failed, for every operation.
func sampleRes() []OpRes {
	return []OpRes{
		&ExchangeIDRes{ClientID: 0x1122334455667788, SequenceID: 1, Flags: ExchgIDFlagUseNonPNFS | ExchgIDFlagConfirmedR,
			StateProtect: StateProtect4{How: SP4None}, ServerOwner: ServerOwner4{MinorID: 2, MajorID: []byte("server")},
			ServerScope: []byte("scope"), HasImplID: true, ImplID: NFSImplID4{Domain: []byte("example.org"), Name: []byte("rpcrdma")}},
		&ExchangeIDRes{Status: ErrClidInuse},
		&CreateSessionRes{SessionID: testSession, Sequence: 1, Flags: CreateSessionFlagConnBackChan, ForeChanAttrs: testChan, BackChanAttrs: testChan},
		&CreateSessionRes{Status: ErrSeqMisordered},
		&BindConnToSessionRes{SessionID: testSession, Dir: CDFS4Both},
		&BindConnToSessionRes{Status: ErrBadsession},
		&SequenceRes{SessionID: testSession, SequenceID: 17, SlotID: 3, HighestSlotID: 9, TargetHighestSlotID: 63, StatusFlags: Seq4StatusCBPathDown},
		&SequenceRes{Status: ErrBadslot},
		&SecinfoRes{OpNum: OpSecinfoNoName, Flavors: []Secinfo4{{Flavor: AuthSys}, {Flavor: RPCSecGSS, OID: []byte{0x2a, 0x86, 0x48}, QOP: 0, Service: RPCGSSSvcPrivacy}}},
		&SecinfoRes{OpNum: OpSecinfo, Status: ErrNoent},
		&TestStateidRes{StatusCodes: []Status{OK, ErrBadStateid}},
		&TestStateidRes{Status: ErrServerfault},
		&StatusRes{OpNum: OpPutfh},
		&StatusRes{OpNum: OpPutfh, Status: ErrBadhandle},
		&StatusRes{OpNum: OpDestroySession, Status: ErrBadsession},
		&StatusRes{OpNum: OpIllegal, Status: ErrOpIllegal},
		&GetfhRes{Object: testFH},
		&GetfhRes{Status: ErrNofilehandle},
		&GetattrRes{Mask: testAttrMask, Attr: testAttr},
		&GetattrRes{Status: ErrStale},
		&SetattrRes{AttrsSet: setMask},
		&SetattrRes{Status: ErrAttrnotsupp},
		&AccessRes{Supported: 0x3f, Access: Access4Read},
		&AccessRes{Status: ErrAccess},
		&UnsupportedRes{OpNum: OpLayoutget, Status: ErrNotsupp},
		&OpenRes{Stateid: testStateid, Cinfo: ChangeInfo4{Atomic: true, Before: 1, After: 2}, Rflags: Open4ResultLocktypePosix,
			AttrSet: NewBitmap(AttrMode), Delegation: OpenDelegation4{Type: DelegateNone}},
		&OpenRes{Stateid: testStateid, Delegation: OpenDelegation4{Type: DelegateNoneExt, WhyNone: WNDContention, WillPushOrSignal: true}},
		&OpenRes{Stateid: testStateid, Delegation: OpenDelegation4{Type: DelegateNoneExt, WhyNone: WNDNotWanted}},
		&OpenRes{Stateid: testStateid, Delegation: OpenDelegation4{Type: DelegateRead, Stateid: testStateid, Recall: false,
			Permissions: NFSAce4{Type: 0, AccessMask: 1, Who: []byte("EVERYONE@")}}},
		&OpenRes{Stateid: testStateid, Delegation: OpenDelegation4{Type: DelegateWrite, Stateid: testStateid, LimitBy: LimitSize, FileSize: 1 << 30,
			Permissions: NFSAce4{Who: []byte("OWNER@")}}},
		&OpenRes{Stateid: testStateid, Delegation: OpenDelegation4{Type: DelegateWrite, Stateid: testStateid, LimitBy: LimitBlocks, NumBlocks: 3, BytesPerBlock: 512}},
		&OpenRes{Status: ErrShareDenied},
		&StateidRes{OpNum: OpOpenDowngrade, Stateid: testStateid},
		&StateidRes{OpNum: OpClose, Stateid: InvalidStateid},
		&StateidRes{OpNum: OpLocku, Status: ErrBadStateid},
		&LockRes{OpNum: OpLock, LockStateid: testStateid},
		&LockRes{OpNum: OpLock, Status: ErrDenied, Denied: LockDenied4{Offset: 5, Length: ^uint64(0), LockType: WriteLT, Owner: StateOwner4{ClientID: 6, Owner: []byte("other")}}},
		&LockRes{OpNum: OpLock, Status: ErrGrace},
		&LockRes{OpNum: OpLockt},
		&LockRes{OpNum: OpLockt, Status: ErrDenied, Denied: LockDenied4{LockType: ReadLT, Owner: StateOwner4{Owner: []byte("o")}}},
		&ReadRes{EOF: true, Data: []byte("data!")},
		&ReadRes{Status: ErrOpenmode},
		&WriteRes{Count: 12, Committed: FileSync4, WriteVerf: Verifier{1, 1, 2, 3, 5, 8}},
		&WriteRes{Status: ErrNospc},
		&CommitRes{WriteVerf: Verifier{1, 1, 2, 3, 5, 8}},
		&CommitRes{Status: ErrIO},
		&CreateRes{Cinfo: ChangeInfo4{Before: 1, After: 2}, AttrSet: NewBitmap(AttrMode)},
		&CreateRes{Status: ErrExist},
		&CinfoRes{OpNum: OpRemove, Cinfo: ChangeInfo4{Atomic: true, Before: 3, After: 4}},
		&CinfoRes{OpNum: OpLink, Status: ErrXdev},
		&RenameRes{SourceCinfo: ChangeInfo4{Before: 1, After: 2}, TargetCinfo: ChangeInfo4{Atomic: true, Before: 3, After: 4}},
		&RenameRes{Status: ErrNotempty},
		&ReadlinkRes{Link: []byte("/etc/hostname")},
		&ReadlinkRes{Status: ErrInval},
		&ReaddirRes{CookieVerf: Verifier{7}, Entries: []Entry4{
			{Cookie: 1, Name: []byte("a"), Mask: testAttrMask, Attrs: testAttr},
			{Cookie: 2, Name: []byte("bb"), Mask: NewBitmap(AttrRdattrError), Attrs: Fattr{RdattrError: ErrAccess}}}, EOF: true},
		&ReaddirRes{CookieVerf: Verifier{7}},
		&ReaddirRes{Status: ErrBadCookie},
	}
}

func show(v any) string { return fmt.Sprintf("%+v", v) }

// Every argument value survives encode, decode and re-encode, alone and inside one
// COMPOUND with all the others.
func TestArgsRoundTrip(t *testing.T) {
	all := sampleArgs()
	for _, a := range all {
		in := encode(a)
		got, err := NewArgs(a.Op())
		if err != nil {
			t.Fatalf("%v: %v", a.Op(), err)
		}
		d := xdr.NewDecoder(in)
		if err := got.DecodeXDR(d); err != nil {
			t.Fatalf("%v: decode: %v", a.Op(), err)
		}
		if d.Len() != 0 {
			t.Errorf("%v: %d bytes left", a.Op(), d.Len())
		}
		if show(got) != show(a) {
			t.Errorf("%v:\n got %s\nwant %s", a.Op(), show(got), show(a))
		}
		if out := encode(got); !bytes.Equal(out, in) {
			t.Errorf("%v: re-encoded differently", a.Op())
		}
	}
	c := CompoundArgs{Tag: []byte("all"), MinorVersion: MinorVersion, Ops: all}
	in := encode(&c)
	var got CompoundArgs
	if err := got.DecodeXDR(xdr.NewDecoder(in)); err != nil {
		t.Fatal(err)
	}
	if len(got.Ops) != len(all) {
		t.Fatalf("%d ops, want %d", len(got.Ops), len(all))
	}
	for i := range all {
		if show(got.Ops[i]) != show(all[i]) {
			t.Errorf("op %d: got %s", i, show(got.Ops[i]))
		}
	}
}

func TestResRoundTrip(t *testing.T) {
	all := sampleRes()
	for _, r := range all {
		in := encode(r)
		got := NewRes(r.Op())
		d := xdr.NewDecoder(in)
		if err := got.DecodeXDR(d); err != nil {
			t.Fatalf("%v: decode: %v", r.Op(), err)
		}
		if d.Len() != 0 {
			t.Errorf("%v: %d bytes left", r.Op(), d.Len())
		}
		if show(got) != show(r) {
			t.Errorf("%v:\n got %s\nwant %s", r.Op(), show(got), show(r))
		}
		if got.Result() != r.Result() {
			t.Errorf("%v: Result %v", r.Op(), got.Result())
		}
	}
	c := CompoundRes{Status: OK, Tag: []byte("all"), Results: all}
	var got CompoundRes
	if err := got.DecodeXDR(xdr.NewDecoder(encode(&c))); err != nil {
		t.Fatal(err)
	}
	for i := range all {
		if show(got.Results[i]) != show(all[i]) {
			t.Errorf("result %d: got %s", i, show(got.Results[i]))
		}
	}
}

// Every operation NewArgs or NewRes knows has a sample, so the round trips cover it.
func TestSamplesCoverEveryOp(t *testing.T) {
	args, res := map[OpNum]bool{}, map[OpNum]bool{}
	for _, a := range sampleArgs() {
		args[a.Op()] = true
	}
	for _, r := range sampleRes() {
		res[r.Op()] = true
	}
	for op := OpNum(0); op < 70; op++ {
		if _, err := NewArgs(op); err == nil && !args[op] {
			t.Errorf("no argument sample for %v", op)
		}
		if !op.Defined() {
			continue
		}
		if _, unsupported := NewRes(op).(*UnsupportedRes); !unsupported && !res[op] {
			// StatusRes operations share one sample per kind.
			if _, ok := NewRes(op).(*StatusRes); !ok {
				t.Errorf("no result sample for %v", op)
			}
		}
	}
}

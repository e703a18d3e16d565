package nfs4

import "strconv"

// RPC program and version numbers (RFC 8881 §16.1 and §20).
const (
	Program      = 100003 // NFS4_PROGRAM
	Version      = 4      // NFS_V4
	MinorVersion = 1      // the minor version this package speaks
	// ProcNull and ProcCompound are the two procedures of NFS_V4.
	ProcNull     = 0
	ProcCompound = 1
	// CBProcNull and CBProcCompound are the two procedures of the callback program,
	// whose program number the client chooses (csa_cb_program in CREATE_SESSION).
	CBProcNull     = 0
	CBProcCompound = 1
	// CBVersion is the callback program's version (NFS_CB).
	CBVersion = 1
)

// Protocol limits (RFC 8881 §3.2 and §2.10.3) and the bounds this package enforces
// when decoding items the protocol leaves unbounded.
const (
	FHSize        = 128  // NFS4_FHSIZE: largest file handle
	VerifierSize  = 8    // NFS4_VERIFIER_SIZE
	OtherSize     = 12   // NFS4_OTHER_SIZE: stateid4.other
	StateidSize   = 16   // stateid4 on the wire: seqid + other
	SessionIDSize = 16   // NFS4_SESSIONID_SIZE
	OpaqueLimit   = 1024 // NFS4_OPAQUE_LIMIT: client and state owners, server owner and scope
	// MaxComponent bounds a component4 (a file name) when decoding; a server answers
	// NFS4ERR_NAMETOOLONG for names longer than its own limit, e.g. MaxNameLen.
	MaxComponent = 1024
	MaxNameLen   = 255  // NAME_MAX, the file name limit of Linux file systems
	MaxPathLen   = 4096 // linktext4 bound (PATH_MAX), as READLINK4res decodes it
	// MaxLinkData bounds CREATE4args' linkdata when decoding; a server answers
	// NFS4ERR_NAMETOOLONG for one longer than it can make, e.g. MaxPathLen.
	MaxLinkData    = 16384
	MaxUTF8Str     = 1024         // bound on other utf8str_* items: tags, owner names, domains
	MaxData        = 1<<20 + 4096 // bound on READ and WRITE data
	MaxBitmapWords = 8            // bitmap4 words accepted (RFC 8881 defines 77 attributes)
	MaxSecFlavors  = 16           // bound on sec_parms and secinfo arrays
	MaxStateids    = 1024         // bound on TEST_STATEID's array
	MaxLayoutTypes = 8            // bound on fs_layout_types
	MaxGIDs        = 16           // authsys_parms gids<16>
	// MaxOpsPerCompound is the most operations a COMPOUND may claim before the decoder
	// refuses it as malformed; a server answers NFS4ERR_TOO_MANY_OPS well below it,
	// at its session's ca_maxoperations.
	MaxOpsPerCompound = 1 << 16
)

// OpNum is nfs_opnum4: the operation number of a COMPOUND operation (RFC 8881 §16.2.1).
type OpNum uint32

// Operation numbers (nfs_opnum4).
const (
	OpAccess             OpNum = 3
	OpClose              OpNum = 4
	OpCommit             OpNum = 5
	OpCreate             OpNum = 6
	OpDelegpurge         OpNum = 7
	OpDelegreturn        OpNum = 8
	OpGetattr            OpNum = 9
	OpGetfh              OpNum = 10
	OpLink               OpNum = 11
	OpLock               OpNum = 12
	OpLockt              OpNum = 13
	OpLocku              OpNum = 14
	OpLookup             OpNum = 15
	OpLookupp            OpNum = 16
	OpNverify            OpNum = 17
	OpOpen               OpNum = 18
	OpOpenattr           OpNum = 19
	OpOpenConfirm        OpNum = 20 // NFSv4.0 only
	OpOpenDowngrade      OpNum = 21
	OpPutfh              OpNum = 22
	OpPutpubfh           OpNum = 23
	OpPutrootfh          OpNum = 24
	OpRead               OpNum = 25
	OpReaddir            OpNum = 26
	OpReadlink           OpNum = 27
	OpRemove             OpNum = 28
	OpRename             OpNum = 29
	OpRenew              OpNum = 30 // NFSv4.0 only
	OpRestorefh          OpNum = 31
	OpSavefh             OpNum = 32
	OpSecinfo            OpNum = 33
	OpSetattr            OpNum = 34
	OpSetclientid        OpNum = 35 // NFSv4.0 only
	OpSetclientidConfirm OpNum = 36 // NFSv4.0 only
	OpVerify             OpNum = 37
	OpWrite              OpNum = 38
	OpReleaseLockowner   OpNum = 39 // NFSv4.0 only
	OpBackchannelCtl     OpNum = 40
	OpBindConnToSession  OpNum = 41
	OpExchangeID         OpNum = 42
	OpCreateSession      OpNum = 43
	OpDestroySession     OpNum = 44
	OpFreeStateid        OpNum = 45
	OpGetDirDelegation   OpNum = 46
	OpGetdeviceinfo      OpNum = 47
	OpGetdevicelist      OpNum = 48
	OpLayoutcommit       OpNum = 49
	OpLayoutget          OpNum = 50
	OpLayoutreturn       OpNum = 51
	OpSecinfoNoName      OpNum = 52
	OpSequence           OpNum = 53
	OpSetSSV             OpNum = 54
	OpTestStateid        OpNum = 55
	OpWantDelegation     OpNum = 56
	OpDestroyClientID    OpNum = 57
	OpReclaimComplete    OpNum = 58
	OpIllegal            OpNum = 10044
)

var opNames = [...]string{
	3: "ACCESS", 4: "CLOSE", 5: "COMMIT", 6: "CREATE", 7: "DELEGPURGE", 8: "DELEGRETURN",
	9: "GETATTR", 10: "GETFH", 11: "LINK", 12: "LOCK", 13: "LOCKT", 14: "LOCKU", 15: "LOOKUP",
	16: "LOOKUPP", 17: "NVERIFY", 18: "OPEN", 19: "OPENATTR", 20: "OPEN_CONFIRM",
	21: "OPEN_DOWNGRADE", 22: "PUTFH", 23: "PUTPUBFH", 24: "PUTROOTFH", 25: "READ",
	26: "READDIR", 27: "READLINK", 28: "REMOVE", 29: "RENAME", 30: "RENEW", 31: "RESTOREFH",
	32: "SAVEFH", 33: "SECINFO", 34: "SETATTR", 35: "SETCLIENTID", 36: "SETCLIENTID_CONFIRM",
	37: "VERIFY", 38: "WRITE", 39: "RELEASE_LOCKOWNER", 40: "BACKCHANNEL_CTL",
	41: "BIND_CONN_TO_SESSION", 42: "EXCHANGE_ID", 43: "CREATE_SESSION", 44: "DESTROY_SESSION",
	45: "FREE_STATEID", 46: "GET_DIR_DELEGATION", 47: "GETDEVICEINFO", 48: "GETDEVICELIST",
	49: "LAYOUTCOMMIT", 50: "LAYOUTGET", 51: "LAYOUTRETURN", 52: "SECINFO_NO_NAME",
	53: "SEQUENCE", 54: "SET_SSV", 55: "TEST_STATEID", 56: "WANT_DELEGATION",
	57: "DESTROY_CLIENTID", 58: "RECLAIM_COMPLETE",
}

// Defined reports whether o is an operation number RFC 8881 defines (including the
// NFSv4.0-only ones and OP_ILLEGAL itself).
func (o OpNum) Defined() bool {
	return o == OpIllegal || (o >= OpAccess && int(o) < len(opNames))
}

func (o OpNum) String() string {
	if o == OpIllegal {
		return "ILLEGAL"
	}
	if o >= OpAccess && int(o) < len(opNames) {
		return opNames[o]
	}
	return "OP" + strconv.FormatUint(uint64(o), 10)
}

// CBOpNum is nfs_cb_opnum4: the operation number of a CB_COMPOUND operation (RFC 8881
// §20).
type CBOpNum uint32

// Callback operation numbers (nfs_cb_opnum4).
const (
	CBOpGetattr            CBOpNum = 3
	CBOpRecall             CBOpNum = 4
	CBOpLayoutrecall       CBOpNum = 5
	CBOpNotify             CBOpNum = 6
	CBOpPushDeleg          CBOpNum = 7
	CBOpRecallAny          CBOpNum = 8
	CBOpRecallableObjAvail CBOpNum = 9
	CBOpRecallSlot         CBOpNum = 10
	CBOpSequence           CBOpNum = 11
	CBOpWantsCancelled     CBOpNum = 12
	CBOpNotifyLock         CBOpNum = 13
	CBOpNotifyDeviceid     CBOpNum = 14
	CBOpIllegal            CBOpNum = 10044
)

var cbOpNames = [...]string{3: "CB_GETATTR", 4: "CB_RECALL", 5: "CB_LAYOUTRECALL",
	6: "CB_NOTIFY", 7: "CB_PUSH_DELEG", 8: "CB_RECALL_ANY", 9: "CB_RECALLABLE_OBJ_AVAIL",
	10: "CB_RECALL_SLOT", 11: "CB_SEQUENCE", 12: "CB_WANTS_CANCELLED", 13: "CB_NOTIFY_LOCK",
	14: "CB_NOTIFY_DEVICEID"}

func (o CBOpNum) String() string {
	if o == CBOpIllegal {
		return "CB_ILLEGAL"
	}
	if o >= CBOpGetattr && int(o) < len(cbOpNames) {
		return cbOpNames[o]
	}
	return "CB_OP" + strconv.FormatUint(uint64(o), 10)
}

// Status is nfsstat4 (RFC 8881 §15.1).
type Status uint32

// Status values (nfsstat4).
const (
	OK                       Status = 0
	ErrPerm                  Status = 1
	ErrNoent                 Status = 2
	ErrIO                    Status = 5
	ErrNxio                  Status = 6
	ErrAccess                Status = 13
	ErrExist                 Status = 17
	ErrXdev                  Status = 18
	ErrNotdir                Status = 20
	ErrIsdir                 Status = 21
	ErrInval                 Status = 22
	ErrFbig                  Status = 27
	ErrNospc                 Status = 28
	ErrRofs                  Status = 30
	ErrMlink                 Status = 31
	ErrNametoolong           Status = 63
	ErrNotempty              Status = 66
	ErrDquot                 Status = 69
	ErrStale                 Status = 70
	ErrBadhandle             Status = 10001
	ErrBadCookie             Status = 10003
	ErrNotsupp               Status = 10004
	ErrToosmall              Status = 10005
	ErrServerfault           Status = 10006
	ErrBadtype               Status = 10007
	ErrDelay                 Status = 10008
	ErrSame                  Status = 10009
	ErrDenied                Status = 10010
	ErrExpired               Status = 10011
	ErrLocked                Status = 10012
	ErrGrace                 Status = 10013
	ErrFhexpired             Status = 10014
	ErrShareDenied           Status = 10015
	ErrWrongsec              Status = 10016
	ErrClidInuse             Status = 10017
	ErrResource              Status = 10018
	ErrMoved                 Status = 10019
	ErrNofilehandle          Status = 10020
	ErrMinorVersMismatch     Status = 10021
	ErrStaleClientid         Status = 10022
	ErrStaleStateid          Status = 10023
	ErrOldStateid            Status = 10024
	ErrBadStateid            Status = 10025
	ErrBadSeqid              Status = 10026
	ErrNotSame               Status = 10027
	ErrLockRange             Status = 10028
	ErrSymlink               Status = 10029
	ErrRestorefh             Status = 10030
	ErrLeaseMoved            Status = 10031
	ErrAttrnotsupp           Status = 10032
	ErrNoGrace               Status = 10033
	ErrReclaimBad            Status = 10034
	ErrReclaimConflict       Status = 10035
	ErrBadxdr                Status = 10036
	ErrLocksHeld             Status = 10037
	ErrOpenmode              Status = 10038
	ErrBadowner              Status = 10039
	ErrBadchar               Status = 10040
	ErrBadname               Status = 10041
	ErrBadRange              Status = 10042
	ErrLockNotsupp           Status = 10043
	ErrOpIllegal             Status = 10044
	ErrDeadlock              Status = 10045
	ErrFileOpen              Status = 10046
	ErrAdminRevoked          Status = 10047
	ErrCbPathDown            Status = 10048
	ErrBadiomode             Status = 10049
	ErrBadlayout             Status = 10050
	ErrBadSessionDigest      Status = 10051
	ErrBadsession            Status = 10052
	ErrBadslot               Status = 10053
	ErrCompleteAlready       Status = 10054
	ErrConnNotBoundToSession Status = 10055
	ErrDelegAlreadyWanted    Status = 10056
	ErrBackChanBusy          Status = 10057
	ErrLayouttrylater        Status = 10058
	ErrLayoutunavailable     Status = 10059
	ErrNomatchingLayout      Status = 10060
	ErrRecallconflict        Status = 10061
	ErrUnknownLayouttype     Status = 10062
	ErrSeqMisordered         Status = 10063
	ErrSequencePos           Status = 10064
	ErrReqTooBig             Status = 10065
	ErrRepTooBig             Status = 10066
	ErrRepTooBigToCache      Status = 10067
	ErrRetryUncachedRep      Status = 10068
	ErrUnsafeCompound        Status = 10069
	ErrTooManyOps            Status = 10070
	ErrOpNotInSession        Status = 10071
	ErrHashAlgUnsupp         Status = 10072
	ErrClientidBusy          Status = 10074
	ErrPnfsIOHole            Status = 10075
	ErrSeqFalseRetry         Status = 10076
	ErrBadHighSlot           Status = 10077
	ErrDeadsession           Status = 10078
	ErrEncrAlgUnsupp         Status = 10079
	ErrPnfsNoLayout          Status = 10080
	ErrNotOnlyOp             Status = 10081
	ErrWrongCred             Status = 10082
	ErrWrongType             Status = 10083
	ErrDirdelegUnavail       Status = 10084
	ErrRejectDeleg           Status = 10085
	ErrReturnconflict        Status = 10086
	ErrDelegRevoked          Status = 10087
)

var statusNames = map[Status]string{
	OK: "NFS4_OK", ErrPerm: "NFS4ERR_PERM", ErrNoent: "NFS4ERR_NOENT", ErrIO: "NFS4ERR_IO",
	ErrNxio: "NFS4ERR_NXIO", ErrAccess: "NFS4ERR_ACCESS", ErrExist: "NFS4ERR_EXIST",
	ErrXdev: "NFS4ERR_XDEV", ErrNotdir: "NFS4ERR_NOTDIR", ErrIsdir: "NFS4ERR_ISDIR",
	ErrInval: "NFS4ERR_INVAL", ErrFbig: "NFS4ERR_FBIG", ErrNospc: "NFS4ERR_NOSPC",
	ErrRofs: "NFS4ERR_ROFS", ErrMlink: "NFS4ERR_MLINK", ErrNametoolong: "NFS4ERR_NAMETOOLONG",
	ErrNotempty: "NFS4ERR_NOTEMPTY", ErrDquot: "NFS4ERR_DQUOT", ErrStale: "NFS4ERR_STALE",
	ErrBadhandle: "NFS4ERR_BADHANDLE", ErrBadCookie: "NFS4ERR_BAD_COOKIE",
	ErrNotsupp: "NFS4ERR_NOTSUPP", ErrToosmall: "NFS4ERR_TOOSMALL",
	ErrServerfault: "NFS4ERR_SERVERFAULT", ErrBadtype: "NFS4ERR_BADTYPE",
	ErrDelay: "NFS4ERR_DELAY", ErrSame: "NFS4ERR_SAME", ErrDenied: "NFS4ERR_DENIED",
	ErrExpired: "NFS4ERR_EXPIRED", ErrLocked: "NFS4ERR_LOCKED", ErrGrace: "NFS4ERR_GRACE",
	ErrFhexpired: "NFS4ERR_FHEXPIRED", ErrShareDenied: "NFS4ERR_SHARE_DENIED",
	ErrWrongsec: "NFS4ERR_WRONGSEC", ErrClidInuse: "NFS4ERR_CLID_INUSE",
	ErrResource: "NFS4ERR_RESOURCE", ErrMoved: "NFS4ERR_MOVED",
	ErrNofilehandle: "NFS4ERR_NOFILEHANDLE", ErrMinorVersMismatch: "NFS4ERR_MINOR_VERS_MISMATCH",
	ErrStaleClientid: "NFS4ERR_STALE_CLIENTID", ErrStaleStateid: "NFS4ERR_STALE_STATEID",
	ErrOldStateid: "NFS4ERR_OLD_STATEID", ErrBadStateid: "NFS4ERR_BAD_STATEID",
	ErrBadSeqid: "NFS4ERR_BAD_SEQID", ErrNotSame: "NFS4ERR_NOT_SAME",
	ErrLockRange: "NFS4ERR_LOCK_RANGE", ErrSymlink: "NFS4ERR_SYMLINK",
	ErrRestorefh: "NFS4ERR_RESTOREFH", ErrLeaseMoved: "NFS4ERR_LEASE_MOVED",
	ErrAttrnotsupp: "NFS4ERR_ATTRNOTSUPP", ErrNoGrace: "NFS4ERR_NO_GRACE",
	ErrReclaimBad: "NFS4ERR_RECLAIM_BAD", ErrReclaimConflict: "NFS4ERR_RECLAIM_CONFLICT",
	ErrBadxdr: "NFS4ERR_BADXDR", ErrLocksHeld: "NFS4ERR_LOCKS_HELD",
	ErrOpenmode: "NFS4ERR_OPENMODE", ErrBadowner: "NFS4ERR_BADOWNER",
	ErrBadchar: "NFS4ERR_BADCHAR", ErrBadname: "NFS4ERR_BADNAME",
	ErrBadRange: "NFS4ERR_BAD_RANGE", ErrLockNotsupp: "NFS4ERR_LOCK_NOTSUPP",
	ErrOpIllegal: "NFS4ERR_OP_ILLEGAL", ErrDeadlock: "NFS4ERR_DEADLOCK",
	ErrFileOpen: "NFS4ERR_FILE_OPEN", ErrAdminRevoked: "NFS4ERR_ADMIN_REVOKED",
	ErrCbPathDown: "NFS4ERR_CB_PATH_DOWN", ErrBadiomode: "NFS4ERR_BADIOMODE",
	ErrBadlayout: "NFS4ERR_BADLAYOUT", ErrBadSessionDigest: "NFS4ERR_BAD_SESSION_DIGEST",
	ErrBadsession: "NFS4ERR_BADSESSION", ErrBadslot: "NFS4ERR_BADSLOT",
	ErrCompleteAlready:       "NFS4ERR_COMPLETE_ALREADY",
	ErrConnNotBoundToSession: "NFS4ERR_CONN_NOT_BOUND_TO_SESSION",
	ErrDelegAlreadyWanted:    "NFS4ERR_DELEG_ALREADY_WANTED", ErrBackChanBusy: "NFS4ERR_BACK_CHAN_BUSY",
	ErrLayouttrylater: "NFS4ERR_LAYOUTTRYLATER", ErrLayoutunavailable: "NFS4ERR_LAYOUTUNAVAILABLE",
	ErrNomatchingLayout: "NFS4ERR_NOMATCHING_LAYOUT", ErrRecallconflict: "NFS4ERR_RECALLCONFLICT",
	ErrUnknownLayouttype: "NFS4ERR_UNKNOWN_LAYOUTTYPE", ErrSeqMisordered: "NFS4ERR_SEQ_MISORDERED",
	ErrSequencePos: "NFS4ERR_SEQUENCE_POS", ErrReqTooBig: "NFS4ERR_REQ_TOO_BIG",
	ErrRepTooBig: "NFS4ERR_REP_TOO_BIG", ErrRepTooBigToCache: "NFS4ERR_REP_TOO_BIG_TO_CACHE",
	ErrRetryUncachedRep: "NFS4ERR_RETRY_UNCACHED_REP", ErrUnsafeCompound: "NFS4ERR_UNSAFE_COMPOUND",
	ErrTooManyOps: "NFS4ERR_TOO_MANY_OPS", ErrOpNotInSession: "NFS4ERR_OP_NOT_IN_SESSION",
	ErrHashAlgUnsupp: "NFS4ERR_HASH_ALG_UNSUPP", ErrClientidBusy: "NFS4ERR_CLIENTID_BUSY",
	ErrPnfsIOHole: "NFS4ERR_PNFS_IO_HOLE", ErrSeqFalseRetry: "NFS4ERR_SEQ_FALSE_RETRY",
	ErrBadHighSlot: "NFS4ERR_BAD_HIGH_SLOT", ErrDeadsession: "NFS4ERR_DEADSESSION",
	ErrEncrAlgUnsupp: "NFS4ERR_ENCR_ALG_UNSUPP", ErrPnfsNoLayout: "NFS4ERR_PNFS_NO_LAYOUT",
	ErrNotOnlyOp: "NFS4ERR_NOT_ONLY_OP", ErrWrongCred: "NFS4ERR_WRONG_CRED",
	ErrWrongType: "NFS4ERR_WRONG_TYPE", ErrDirdelegUnavail: "NFS4ERR_DIRDELEG_UNAVAIL",
	ErrRejectDeleg: "NFS4ERR_REJECT_DELEG", ErrReturnconflict: "NFS4ERR_RETURNCONFLICT",
	ErrDelegRevoked: "NFS4ERR_DELEG_REVOKED",
}

// String returns the RFC 8881 name of s (e.g. "NFS4ERR_STALE"), or "NFS4ERR(n)".
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "NFS4ERR(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// EXCHANGE_ID flags (eia_flags, eir_flags; RFC 8881 §18.35).
const (
	ExchgIDFlagSuppMovedRefer   uint32 = 0x00000001
	ExchgIDFlagSuppMovedMigr    uint32 = 0x00000002
	ExchgIDFlagSuppFenceOps     uint32 = 0x00000004
	ExchgIDFlagBindPrincStateid uint32 = 0x00000100
	ExchgIDFlagUseNonPNFS       uint32 = 0x00010000
	ExchgIDFlagUsePNFSMDS       uint32 = 0x00020000
	ExchgIDFlagUsePNFSDS        uint32 = 0x00040000
	ExchgIDFlagMaskPNFS         uint32 = 0x00070000
	ExchgIDFlagUpdConfirmedRecA uint32 = 0x40000000
	ExchgIDFlagConfirmedR       uint32 = 0x80000000
)

// CREATE_SESSION flags (csa_flags, csr_flags; RFC 8881 §18.36).
const (
	CreateSessionFlagPersist      uint32 = 0x00000001
	CreateSessionFlagConnBackChan uint32 = 0x00000002
	CreateSessionFlagConnRDMA     uint32 = 0x00000004
)

// SEQUENCE status flags (sr_status_flags; RFC 8881 §18.46).
const (
	Seq4StatusCBPathDown              uint32 = 0x00000001
	Seq4StatusCBGSSContextsExpiring   uint32 = 0x00000002
	Seq4StatusCBGSSContextsExpired    uint32 = 0x00000004
	Seq4StatusExpiredAllStateRevoked  uint32 = 0x00000008
	Seq4StatusExpiredSomeStateRevoked uint32 = 0x00000010
	Seq4StatusAdminStateRevoked       uint32 = 0x00000020
	Seq4StatusRecallableStateRevoked  uint32 = 0x00000040
	Seq4StatusLeaseMoved              uint32 = 0x00000080
	Seq4StatusRestartReclaimNeeded    uint32 = 0x00000100
	Seq4StatusCBPathDownSession       uint32 = 0x00000200
	Seq4StatusBackchannelFault        uint32 = 0x00000400
	Seq4StatusDevidChanged            uint32 = 0x00000800
	Seq4StatusDevidDeleted            uint32 = 0x00001000
)

// OPEN share access, deny and want bits (RFC 8881 §18.16).
const (
	ShareAccessRead  uint32 = 0x00000001
	ShareAccessWrite uint32 = 0x00000002
	ShareAccessBoth  uint32 = 0x00000003
	ShareDenyNone    uint32 = 0x00000000
	ShareDenyRead    uint32 = 0x00000001
	ShareDenyWrite   uint32 = 0x00000002
	ShareDenyBoth    uint32 = 0x00000003

	ShareAccessWantDelegMask                 uint32 = 0x0000FF00
	ShareAccessWantNoPreference              uint32 = 0x00000000
	ShareAccessWantReadDeleg                 uint32 = 0x00000100
	ShareAccessWantWriteDeleg                uint32 = 0x00000200
	ShareAccessWantAnyDeleg                  uint32 = 0x00000300
	ShareAccessWantNoDeleg                   uint32 = 0x00000400
	ShareAccessWantCancel                    uint32 = 0x00000500
	ShareAccessWantSignalDelegWhenResrcAvail uint32 = 0x00010000
	ShareAccessWantPushDelegWhenUncontended  uint32 = 0x00020000
)

// ACCESS bits (RFC 8881 §18.1).
const (
	Access4Read    uint32 = 0x00000001
	Access4Lookup  uint32 = 0x00000002
	Access4Modify  uint32 = 0x00000004
	Access4Extend  uint32 = 0x00000008
	Access4Delete  uint32 = 0x00000010
	Access4Execute uint32 = 0x00000020
)

// OPEN result flags (rflags; RFC 8881 §18.16).
const (
	Open4ResultConfirm          uint32 = 0x00000002
	Open4ResultLocktypePosix    uint32 = 0x00000004
	Open4ResultPreserveUnlinked uint32 = 0x00000008
	Open4ResultMayNotifyLock    uint32 = 0x00000020
)

// LockType is nfs_lock_type4.
type LockType uint32

// Lock types.
const (
	ReadLT   LockType = 1
	WriteLT  LockType = 2
	ReadwLT  LockType = 3 // blocking read
	WritewLT LockType = 4 // blocking write
)

// Valid reports whether t is a defined nfs_lock_type4.
func (t LockType) Valid() bool { return t >= ReadLT && t <= WritewLT }

// CreateMode is createmode4.
type CreateMode uint32

// Create modes of OPEN4_CREATE.
const (
	Unchecked4  CreateMode = 0
	Guarded4    CreateMode = 1
	Exclusive4  CreateMode = 2
	Exclusive41 CreateMode = 3 // EXCLUSIVE4_1
)

// OpenType is opentype4.
type OpenType uint32

// Open types.
const (
	Open4NoCreate OpenType = 0
	Open4Create   OpenType = 1
)

// ClaimType is open_claim_type4.
type ClaimType uint32

// Open claim types.
const (
	ClaimNull         ClaimType = 0
	ClaimPrevious     ClaimType = 1
	ClaimDelegateCur  ClaimType = 2
	ClaimDelegatePrev ClaimType = 3
	ClaimFH           ClaimType = 4
	ClaimDelegCurFH   ClaimType = 5
	ClaimDelegPrevFH  ClaimType = 6
)

// DelegationType is open_delegation_type4.
type DelegationType uint32

// Delegation types.
const (
	DelegateNone    DelegationType = 0
	DelegateRead    DelegationType = 1
	DelegateWrite   DelegationType = 2
	DelegateNoneExt DelegationType = 3 // OPEN_DELEGATE_NONE_EXT (NFSv4.1)
)

// WhyNoDelegation is why_no_delegation4.
type WhyNoDelegation uint32

// Reasons for OPEN_DELEGATE_NONE_EXT.
const (
	WNDNotWanted              WhyNoDelegation = 0
	WNDContention             WhyNoDelegation = 1
	WNDResource               WhyNoDelegation = 2
	WNDNotSuppFtype           WhyNoDelegation = 3
	WNDWriteDelegNotSuppFtype WhyNoDelegation = 4
	WNDNotSuppUpgrade         WhyNoDelegation = 5
	WNDNotSuppDowngrade       WhyNoDelegation = 6
	WNDCancelled              WhyNoDelegation = 7
	WNDIsDir                  WhyNoDelegation = 8
)

// StableHow is stable_how4.
type StableHow uint32

// Write stability levels.
const (
	Unstable4 StableHow = 0
	DataSync4 StableHow = 1
	FileSync4 StableHow = 2
)

// FileType is nfs_ftype4.
type FileType uint32

// File types.
const (
	NF4Reg       FileType = 1
	NF4Dir       FileType = 2
	NF4Blk       FileType = 3
	NF4Chr       FileType = 4
	NF4Lnk       FileType = 5
	NF4Sock      FileType = 6
	NF4Fifo      FileType = 7
	NF4AttrDir   FileType = 8
	NF4NamedAttr FileType = 9
)

// Valid reports whether t is a defined nfs_ftype4.
func (t FileType) Valid() bool { return t >= NF4Reg && t <= NF4NamedAttr }

// File handle expiry types (fh_expire_type attribute; RFC 8881 §4.2.3).
const (
	FH4Persistent       uint32 = 0x00000000
	FH4NoexpireWithOpen uint32 = 0x00000001
	FH4VolatileAny      uint32 = 0x00000002
	FH4VolMigration     uint32 = 0x00000004
	FH4VolRename        uint32 = 0x00000008
)

// StateProtectHow is state_protect_how4 (EXCHANGE_ID).
type StateProtectHow uint32

// State protection kinds.
const (
	SP4None     StateProtectHow = 0
	SP4MachCred StateProtectHow = 1
	SP4SSV      StateProtectHow = 2
)

// ChannelDirFromClient is channel_dir_from_client4 (BIND_CONN_TO_SESSION).
type ChannelDirFromClient uint32

// Channel directions a client asks for.
const (
	CDFC4Fore       ChannelDirFromClient = 0x1
	CDFC4Back       ChannelDirFromClient = 0x2
	CDFC4ForeOrBoth ChannelDirFromClient = 0x3
	CDFC4BackOrBoth ChannelDirFromClient = 0x7
)

// ChannelDirFromServer is channel_dir_from_server4 (BIND_CONN_TO_SESSION).
type ChannelDirFromServer uint32

// Channel directions a server grants.
const (
	CDFS4Fore ChannelDirFromServer = 0x1
	CDFS4Back ChannelDirFromServer = 0x2
	CDFS4Both ChannelDirFromServer = 0x3
)

// SecinfoStyle is secinfo_style4 (SECINFO_NO_NAME).
type SecinfoStyle uint32

// SECINFO_NO_NAME styles.
const (
	SecinfoStyleCurrentFH SecinfoStyle = 0
	SecinfoStyleParent    SecinfoStyle = 1
)

// TimeHow is time_how4 (settime4).
type TimeHow uint32

// Ways to set a time attribute.
const (
	SetToServerTime4 TimeHow = 0
	SetToClientTime4 TimeHow = 1
)

// LimitBy is limit_by4 (nfs_space_limit4 in a write delegation).
type LimitBy uint32

// Space limit kinds.
const (
	LimitSize   LimitBy = 1
	LimitBlocks LimitBy = 2
)

// RPC authentication flavors that appear inside NFSv4 (callback_sec_parms4, secinfo4).
const (
	AuthNone  uint32 = 0
	AuthSys   uint32 = 1
	RPCSecGSS uint32 = 6
)

// RPCSEC_GSS services (rpc_gss_svc_t) in a secinfo4 entry.
const (
	RPCGSSSvcNone      uint32 = 1
	RPCGSSSvcIntegrity uint32 = 2
	RPCGSSSvcPrivacy   uint32 = 3
)

// ACL support bits (aclsupport attribute).
const (
	ACL4SupportAllowACL uint32 = 0x00000001
	ACL4SupportDenyACL  uint32 = 0x00000002
	ACL4SupportAuditACL uint32 = 0x00000004
	ACL4SupportAlarmACL uint32 = 0x00000008
)

package nfs4

import "fmt"

// NewArgs returns a new, zero argument value for operation op. It fails with a
// *StatusError carrying NFS4ERR_OP_ILLEGAL if op is not a defined operation, and
// NFS4ERR_NOTSUPP if this package does not decode op's arguments (the server answers the
// same). Generic code (tests, fuzzing, logging) uses it; servers and clients on the hot
// path keep their own typed values.
func NewArgs(op OpNum) (OpArgs, error) {
	switch op {
	case OpPutrootfh, OpPutpubfh, OpGetfh, OpSavefh, OpRestorefh, OpLookupp, OpReadlink:
		return &NoArgs{OpNum: op}, nil
	case OpPutfh:
		return &PutfhArgs{}, nil
	case OpLookup:
		return &LookupArgs{}, nil
	case OpExchangeID:
		return &ExchangeIDArgs{}, nil
	case OpCreateSession:
		return &CreateSessionArgs{}, nil
	case OpDestroySession:
		return &DestroySessionArgs{}, nil
	case OpDestroyClientID:
		return &DestroyClientIDArgs{}, nil
	case OpBindConnToSession:
		return &BindConnToSessionArgs{}, nil
	case OpSequence:
		return &SequenceArgs{}, nil
	case OpReclaimComplete:
		return &ReclaimCompleteArgs{}, nil
	case OpSecinfoNoName:
		return &SecinfoNoNameArgs{}, nil
	case OpSecinfo:
		return &SecinfoArgs{}, nil
	case OpTestStateid:
		return &TestStateidArgs{}, nil
	case OpFreeStateid, OpDelegreturn:
		return &StateidArgs{OpNum: op}, nil
	case OpBackchannelCtl:
		return &BackchannelCtlArgs{}, nil
	case OpGetattr:
		return &GetattrArgs{}, nil
	case OpSetattr:
		return &SetattrArgs{}, nil
	case OpVerify, OpNverify:
		return &VerifyArgs{OpNum: op}, nil
	case OpAccess:
		return &AccessArgs{}, nil
	case OpOpen:
		return &OpenArgs{}, nil
	case OpOpenDowngrade:
		return &OpenDowngradeArgs{}, nil
	case OpClose:
		return &CloseArgs{}, nil
	case OpLock:
		return &LockArgs{}, nil
	case OpLockt:
		return &LocktArgs{}, nil
	case OpLocku:
		return &LockuArgs{}, nil
	case OpReleaseLockowner:
		return &ReleaseLockownerArgs{}, nil
	case OpRead:
		return &ReadArgs{}, nil
	case OpWrite:
		return &WriteArgs{}, nil
	case OpCommit:
		return &CommitArgs{}, nil
	case OpCreate:
		return &CreateArgs{}, nil
	case OpRemove, OpLink:
		return &NameArgs{OpNum: op}, nil
	case OpRename:
		return &RenameArgs{}, nil
	case OpReaddir:
		return &ReaddirArgs{}, nil
	}
	if !op.Defined() || op == OpIllegal {
		return nil, &StatusError{Status: ErrOpIllegal, Err: fmt.Errorf("nfs4: operation %d: %w", uint32(op), ErrBadEnum)}
	}
	return nil, &StatusError{Status: ErrNotsupp, Err: fmt.Errorf("nfs4: %v arguments: %w", op, ErrUnsupported)}
}

// NewRes returns a new, zero result value for operation op, which must be defined
// (OpIllegal included). Operations whose results this package does not decode get an
// UnsupportedRes.
func NewRes(op OpNum) OpRes {
	switch op {
	case OpPutfh, OpPutpubfh, OpPutrootfh, OpSavefh, OpRestorefh, OpLookup, OpLookupp,
		OpVerify, OpNverify, OpDelegreturn, OpReleaseLockowner, OpDestroySession,
		OpDestroyClientID, OpFreeStateid, OpReclaimComplete, OpBackchannelCtl, OpIllegal:
		return &StatusRes{OpNum: op}
	case OpGetfh:
		return &GetfhRes{}
	case OpExchangeID:
		return &ExchangeIDRes{}
	case OpCreateSession:
		return &CreateSessionRes{}
	case OpBindConnToSession:
		return &BindConnToSessionRes{}
	case OpSequence:
		return &SequenceRes{}
	case OpSecinfo, OpSecinfoNoName:
		return &SecinfoRes{OpNum: op}
	case OpTestStateid:
		return &TestStateidRes{}
	case OpGetattr:
		return &GetattrRes{}
	case OpSetattr:
		return &SetattrRes{}
	case OpAccess:
		return &AccessRes{}
	case OpOpen:
		return &OpenRes{}
	case OpOpenDowngrade, OpClose, OpLocku:
		return &StateidRes{OpNum: op}
	case OpLock, OpLockt:
		return &LockRes{OpNum: op}
	case OpRead:
		return &ReadRes{}
	case OpWrite:
		return &WriteRes{}
	case OpCommit:
		return &CommitRes{}
	case OpCreate:
		return &CreateRes{}
	case OpRemove, OpLink:
		return &CinfoRes{OpNum: op}
	case OpRename:
		return &RenameRes{}
	case OpReadlink:
		return &ReadlinkRes{}
	case OpReaddir:
		return &ReaddirRes{}
	}
	return &UnsupportedRes{OpNum: op}
}

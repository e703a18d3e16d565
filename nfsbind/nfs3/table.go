package nfs3

// NewArgs returns a new, zero argument value for NFSv3 procedure p, or nil if p is not
// an NFSv3 procedure. Generic code (tests, fuzzing, logging clients) uses it; servers and
// clients on the hot path keep their own typed values.
func NewArgs(p Proc) Message {
	switch p {
	case ProcNull:
		return &Void{}
	case ProcGetattr, ProcReadlink, ProcFsstat, ProcFsinfo, ProcPathconf:
		return &FHArgs{}
	case ProcSetattr:
		return &SetattrArgs{}
	case ProcLookup, ProcRemove, ProcRmdir:
		return &DirOpArgsMsg{}
	case ProcAccess:
		return &AccessArgs{}
	case ProcRead:
		return &ReadArgs{}
	case ProcWrite:
		return &WriteArgs{}
	case ProcCreate:
		return &CreateArgs{}
	case ProcMkdir:
		return &MkdirArgs{}
	case ProcSymlink:
		return &SymlinkArgs{}
	case ProcMknod:
		return &MknodArgs{}
	case ProcRename:
		return &RenameArgs{}
	case ProcLink:
		return &LinkArgs{}
	case ProcReaddir:
		return &ReaddirArgs{}
	case ProcReaddirplus:
		return &ReaddirplusArgs{}
	case ProcCommit:
		return &CommitArgs{}
	}
	return nil
}

// NewRes returns a new, zero result value for NFSv3 procedure p, or nil if p is not an
// NFSv3 procedure.
func NewRes(p Proc) Message {
	switch p {
	case ProcNull:
		return &Void{}
	case ProcGetattr:
		return &GetattrRes{}
	case ProcSetattr, ProcRemove, ProcRmdir:
		return &WccRes{}
	case ProcLookup:
		return &LookupRes{}
	case ProcAccess:
		return &AccessRes{}
	case ProcReadlink:
		return &ReadlinkRes{}
	case ProcRead:
		return &ReadRes{}
	case ProcWrite:
		return &WriteRes{}
	case ProcCreate, ProcMkdir, ProcSymlink, ProcMknod:
		return &CreateRes{}
	case ProcRename:
		return &RenameRes{}
	case ProcLink:
		return &LinkRes{}
	case ProcReaddir:
		return &ReaddirRes{}
	case ProcReaddirplus:
		return &ReaddirplusRes{}
	case ProcFsstat:
		return &FsstatRes{}
	case ProcFsinfo:
		return &FsinfoRes{}
	case ProcPathconf:
		return &PathconfRes{}
	case ProcCommit:
		return &CommitRes{}
	}
	return nil
}

// NewMountArgs returns a new, zero argument value for MOUNT v3 procedure p, or nil.
func NewMountArgs(p MountProc) Message {
	switch p {
	case MountProcNull, MountProcDump, MountProcUmntall, MountProcExport:
		return &Void{}
	case MountProcMnt, MountProcUmnt:
		return &DirPathArgs{}
	}
	return nil
}

// NewMountRes returns a new, zero result value for MOUNT v3 procedure p, or nil.
func NewMountRes(p MountProc) Message {
	switch p {
	case MountProcNull, MountProcUmnt, MountProcUmntall:
		return &Void{}
	case MountProcMnt:
		return &MntRes{}
	case MountProcDump:
		return &DumpRes{}
	case MountProcExport:
		return &ExportRes{}
	}
	return nil
}

package nfs3

import "strconv"

// RPC program and version numbers (RFC 1813 §3 and Appendix I).
const (
	Program      = 100003 // NFS_PROGRAM
	Version      = 3      // NFS_V3
	MountProgram = 100005 // MOUNT_PROGRAM
	MountVersion = 3      // MOUNT_V3
)

// Protocol limits. FHSize, CookieVerfSize, CreateVerfSize and WriteVerfSize are fixed by
// RFC 1813 §2.4; MaxNameLen and MaxPathLen are the MOUNT limits (MNTNAMLEN, MNTPATHLEN),
// which this package also applies to the names of READDIR entries. filename3 has no
// bound in RFC 1813 §2.5, and a name longer than the server's limit is
// NFS3ERR_NAMETOOLONG (§3.2), not an argument that does not decode: MaxComponent bounds
// the filename3 of a call's diropargs3 when decoding. nfspath3 (a symbolic link's text in
// READLINK and SYMLINK) has no bound in RFC 1813 §2.5 either: MaxNFSPathLen bounds it as
// Linux does (PATH_MAX), so a link a Linux client or server makes always decodes, and
// MaxSymlinkData bounds the text of a SYMLINK call when decoding, so that a server
// answers a longer one than it can make NFS3ERR_NAMETOOLONG, as knfsd does. MaxData
// bounds READ and WRITE counts (1 MiB plus one page, the largest payload a Linux client
// sends).
const (
	FHSize         = 64
	CookieVerfSize = 8
	CreateVerfSize = 8
	WriteVerfSize  = 8
	MaxNameLen     = 255
	MaxComponent   = 1024
	MaxPathLen     = 1024
	MaxNFSPathLen  = 4096
	MaxSymlinkData = 16384
	MaxData        = 1<<20 + 4096
	// MaxAuthFlavors bounds the auth_flavors array of a MNT reply.
	MaxAuthFlavors = 16
)

// Proc is an NFSv3 procedure number.
type Proc uint32

// NFSv3 procedures (RFC 1813 §3.3).
const (
	ProcNull        Proc = 0
	ProcGetattr     Proc = 1
	ProcSetattr     Proc = 2
	ProcLookup      Proc = 3
	ProcAccess      Proc = 4
	ProcReadlink    Proc = 5
	ProcRead        Proc = 6
	ProcWrite       Proc = 7
	ProcCreate      Proc = 8
	ProcMkdir       Proc = 9
	ProcSymlink     Proc = 10
	ProcMknod       Proc = 11
	ProcRemove      Proc = 12
	ProcRmdir       Proc = 13
	ProcRename      Proc = 14
	ProcLink        Proc = 15
	ProcReaddir     Proc = 16
	ProcReaddirplus Proc = 17
	ProcFsstat      Proc = 18
	ProcFsinfo      Proc = 19
	ProcPathconf    Proc = 20
	ProcCommit      Proc = 21
	// NumProcs is one past the highest NFSv3 procedure number.
	NumProcs = 22
)

var procNames = [NumProcs]string{"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK",
	"READ", "WRITE", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
	"READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"}

func (p Proc) String() string {
	if p < NumProcs {
		return procNames[p]
	}
	return "PROC" + strconv.FormatUint(uint64(p), 10)
}

// MountProc is a MOUNT v3 procedure number.
type MountProc uint32

// MOUNT v3 procedures (RFC 1813 Appendix I).
const (
	MountProcNull    MountProc = 0
	MountProcMnt     MountProc = 1
	MountProcDump    MountProc = 2
	MountProcUmnt    MountProc = 3
	MountProcUmntall MountProc = 4
	MountProcExport  MountProc = 5
	// NumMountProcs is one past the highest MOUNT v3 procedure number.
	NumMountProcs = 6
)

var mountProcNames = [NumMountProcs]string{"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"}

func (p MountProc) String() string {
	if p < NumMountProcs {
		return "MOUNTPROC3_" + mountProcNames[p]
	}
	return "MOUNTPROC" + strconv.FormatUint(uint64(p), 10)
}

// Status is nfsstat3 (RFC 1813 §2.6). A non-OK Status is an error.
type Status uint32

// nfsstat3 values.
const (
	StatusOK          Status = 0
	StatusPerm        Status = 1
	StatusNoEnt       Status = 2
	StatusIO          Status = 5
	StatusNXIO        Status = 6
	StatusAcces       Status = 13
	StatusExist       Status = 17
	StatusXDev        Status = 18
	StatusNoDev       Status = 19
	StatusNotDir      Status = 20
	StatusIsDir       Status = 21
	StatusInval       Status = 22
	StatusFBig        Status = 27
	StatusNoSpc       Status = 28
	StatusROFS        Status = 30
	StatusMLink       Status = 31
	StatusNameTooLong Status = 63
	StatusNotEmpty    Status = 66
	StatusDQuot       Status = 69
	StatusStale       Status = 70
	StatusRemote      Status = 71
	StatusBadHandle   Status = 10001
	StatusNotSync     Status = 10002
	StatusBadCookie   Status = 10003
	StatusNotSupp     Status = 10004
	StatusTooSmall    Status = 10005
	StatusServerFault Status = 10006
	StatusBadType     Status = 10007
	StatusJukebox     Status = 10008
)

var statusNames = map[Status]string{
	StatusOK: "NFS3_OK", StatusPerm: "NFS3ERR_PERM", StatusNoEnt: "NFS3ERR_NOENT",
	StatusIO: "NFS3ERR_IO", StatusNXIO: "NFS3ERR_NXIO", StatusAcces: "NFS3ERR_ACCES",
	StatusExist: "NFS3ERR_EXIST", StatusXDev: "NFS3ERR_XDEV", StatusNoDev: "NFS3ERR_NODEV",
	StatusNotDir: "NFS3ERR_NOTDIR", StatusIsDir: "NFS3ERR_ISDIR", StatusInval: "NFS3ERR_INVAL",
	StatusFBig: "NFS3ERR_FBIG", StatusNoSpc: "NFS3ERR_NOSPC", StatusROFS: "NFS3ERR_ROFS",
	StatusMLink: "NFS3ERR_MLINK", StatusNameTooLong: "NFS3ERR_NAMETOOLONG",
	StatusNotEmpty: "NFS3ERR_NOTEMPTY", StatusDQuot: "NFS3ERR_DQUOT", StatusStale: "NFS3ERR_STALE",
	StatusRemote: "NFS3ERR_REMOTE", StatusBadHandle: "NFS3ERR_BADHANDLE",
	StatusNotSync: "NFS3ERR_NOT_SYNC", StatusBadCookie: "NFS3ERR_BAD_COOKIE",
	StatusNotSupp: "NFS3ERR_NOTSUPP", StatusTooSmall: "NFS3ERR_TOOSMALL",
	StatusServerFault: "NFS3ERR_SERVERFAULT", StatusBadType: "NFS3ERR_BADTYPE",
	StatusJukebox: "NFS3ERR_JUKEBOX",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "nfsstat3(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// Error makes a non-OK Status usable as an error, in words with the name and number:
// "no such file or directory (NFS3ERR_NOENT, 2)".
func (s Status) Error() string { return inWords(s.Text(), s.String(), uint32(s)) }

// FileType is ftype3 (RFC 1813 §2.6).
type FileType uint32

// ftype3 values.
const (
	TypeReg  FileType = 1 // NF3REG
	TypeDir  FileType = 2 // NF3DIR
	TypeBlk  FileType = 3 // NF3BLK
	TypeChr  FileType = 4 // NF3CHR
	TypeLnk  FileType = 5 // NF3LNK
	TypeSock FileType = 6 // NF3SOCK
	TypeFifo FileType = 7 // NF3FIFO
)

var typeNames = [...]string{"", "NF3REG", "NF3DIR", "NF3BLK", "NF3CHR", "NF3LNK", "NF3SOCK", "NF3FIFO"}

// Valid reports whether t is one of the seven ftype3 values.
func (t FileType) Valid() bool { return t >= TypeReg && t <= TypeFifo }

func (t FileType) String() string { return enumString(typeNames[:], "ftype3", uint32(t)) }

// enumString is names[v], or typ(v) for a value names has no name for ("" included).
func enumString(names []string, typ string, v uint32) string {
	if uint64(v) < uint64(len(names)) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.FormatUint(uint64(v), 10) + ")"
}

// StableHow is stable_how (RFC 1813 §3.3.7): how far WRITE data must reach stable
// storage before the reply.
type StableHow uint32

// stable_how values.
const (
	Unstable StableHow = 0 // UNSTABLE
	DataSync StableHow = 1 // DATA_SYNC
	FileSync StableHow = 2 // FILE_SYNC
)

var stableNames = [...]string{Unstable: "UNSTABLE", DataSync: "DATA_SYNC", FileSync: "FILE_SYNC"}

func (s StableHow) String() string { return enumString(stableNames[:], "stable_how", uint32(s)) }

// CreateMode is createmode3 (RFC 1813 §3.3.8).
type CreateMode uint32

// createmode3 values.
const (
	Unchecked CreateMode = 0 // UNCHECKED
	Guarded   CreateMode = 1 // GUARDED
	Exclusive CreateMode = 2 // EXCLUSIVE
)

var createModeNames = [...]string{Unchecked: "UNCHECKED", Guarded: "GUARDED", Exclusive: "EXCLUSIVE"}

func (m CreateMode) String() string { return enumString(createModeNames[:], "createmode3", uint32(m)) }

// TimeHow is time_how (RFC 1813 §2.6): how SETATTR sets a time.
type TimeHow uint32

// time_how values.
const (
	DontChange      TimeHow = 0 // DONT_CHANGE
	SetToServerTime TimeHow = 1 // SET_TO_SERVER_TIME
	SetToClientTime TimeHow = 2 // SET_TO_CLIENT_TIME
)

// ACCESS3 permission bits (RFC 1813 §3.3.4).
const (
	AccessRead    = 0x0001
	AccessLookup  = 0x0002
	AccessModify  = 0x0004
	AccessExtend  = 0x0008
	AccessDelete  = 0x0010
	AccessExecute = 0x0020
)

// FSINFO3 properties bits (RFC 1813 §3.3.19).
const (
	FSFLink        = 0x0001
	FSFSymlink     = 0x0002
	FSFHomogeneous = 0x0008
	FSFCanSetTime  = 0x0010
)

// MountStat is mountstat3 (RFC 1813 Appendix I).
type MountStat uint32

// mountstat3 values.
const (
	MountOK             MountStat = 0
	MountErrPerm        MountStat = 1
	MountErrNoEnt       MountStat = 2
	MountErrIO          MountStat = 5
	MountErrAcces       MountStat = 13
	MountErrNotDir      MountStat = 20
	MountErrInval       MountStat = 22
	MountErrNameTooLong MountStat = 63
	MountErrNotSupp     MountStat = 10004
	MountErrServerFault MountStat = 10006
)

func (s MountStat) String() string {
	switch s {
	case MountOK:
		return "MNT3_OK"
	case MountErrPerm:
		return "MNT3ERR_PERM"
	case MountErrNoEnt:
		return "MNT3ERR_NOENT"
	case MountErrIO:
		return "MNT3ERR_IO"
	case MountErrAcces:
		return "MNT3ERR_ACCES"
	case MountErrNotDir:
		return "MNT3ERR_NOTDIR"
	case MountErrInval:
		return "MNT3ERR_INVAL"
	case MountErrNameTooLong:
		return "MNT3ERR_NAMETOOLONG"
	case MountErrNotSupp:
		return "MNT3ERR_NOTSUPP"
	case MountErrServerFault:
		return "MNT3ERR_SERVERFAULT"
	}
	return "mountstat3(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// Error makes a non-OK MountStat usable as an error, in words with the name and
// number: "no such file or directory (MNT3ERR_NOENT, 2)".
func (s MountStat) Error() string { return inWords(s.Text(), s.String(), uint32(s)) }

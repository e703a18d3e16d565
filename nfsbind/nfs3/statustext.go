package nfs3

import "strconv"

// statusTexts say what each nfsstat3 means, in the words of RFC 1813 §2.6 (where
// the code mirrors an errno, the usual text for that errno).
var statusTexts = map[Status]string{
	StatusOK:          "success",
	StatusPerm:        "operation not permitted",
	StatusNoEnt:       "no such file or directory",
	StatusIO:          "input/output error",
	StatusNXIO:        "no such device or address",
	StatusAcces:       "permission denied",
	StatusExist:       "file exists",
	StatusXDev:        "cross-device link",
	StatusNoDev:       "no such device",
	StatusNotDir:      "not a directory",
	StatusIsDir:       "is a directory",
	StatusInval:       "invalid argument",
	StatusFBig:        "file too large",
	StatusNoSpc:       "no space left on device",
	StatusROFS:        "read-only file system",
	StatusMLink:       "too many hard links",
	StatusNameTooLong: "file name too long",
	StatusNotEmpty:    "directory not empty",
	StatusDQuot:       "disk quota exceeded",
	StatusStale:       "stale file handle",
	StatusRemote:      "too many levels of remote in path",
	StatusBadHandle:   "illegal NFS file handle",
	StatusNotSync:     "update synchronization mismatch",
	StatusBadCookie:   "READDIR cookie is stale",
	StatusNotSupp:     "operation not supported",
	StatusTooSmall:    "buffer or request is too small",
	StatusServerFault: "server error with no NFSv3 equivalent",
	StatusBadType:     "type not supported by the server",
	StatusJukebox:     "server busy, try again later",
}

// Text says in words what s means, e.g. "no such file or directory" for
// NFS3ERR_NOENT ("unknown status" for a value RFC 1813 does not define).
func (s Status) Text() string {
	if t, ok := statusTexts[s]; ok {
		return t
	}
	return "unknown status"
}

// mountStatTexts say what each mountstat3 means (RFC 1813 Appendix I).
var mountStatTexts = map[MountStat]string{
	MountOK:             "success",
	MountErrPerm:        "not owner",
	MountErrNoEnt:       "no such file or directory",
	MountErrIO:          "input/output error",
	MountErrAcces:       "permission denied",
	MountErrNotDir:      "not a directory",
	MountErrInval:       "invalid argument",
	MountErrNameTooLong: "file name too long",
	MountErrNotSupp:     "operation not supported",
	MountErrServerFault: "server error with no MOUNT equivalent",
}

// Text says in words what s means ("unknown status" for an undefined value).
func (s MountStat) Text() string {
	if t, ok := mountStatTexts[s]; ok {
		return t
	}
	return "unknown status"
}

// inWords formats a status for people: its meaning, then its name and number, e.g.
// "no such file or directory (NFS3ERR_NOENT, 2)".
func inWords(text, name string, v uint32) string {
	return text + " (" + name + ", " + strconv.FormatUint(uint64(v), 10) + ")"
}

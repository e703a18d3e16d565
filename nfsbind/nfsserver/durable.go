//go:build linux

package nfsserver

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Stable metadata.
//
// NFSv3 clients treat a successful reply to a modifying procedure as a promise that
// the change survives a server crash (RFC 1813 keeps only WRITE's UNSTABLE data out
// of that promise, to be made good by COMMIT). So on a sync export (Options.Async
// false, the default) CREATE, MKDIR, SYMLINK, MKNOD, LINK, RENAME, REMOVE, RMDIR and
// SETATTR fsync what they changed before replying:
//
//   - the directory whose entries changed (both directories of a RENAME, once when
//     they are the same);
//   - the new object of CREATE and MKDIR, the linked file of LINK (its link count),
//     and the object of SETATTR (a size change is data as well as metadata; fsync
//     covers both).
//
// A symbolic link or special file cannot be opened for fsync from user space. When
// SYMLINK or MKNOD makes one, the directory's fsync is what makes it stable: on the
// journaling file systems (ext4, xfs) the new inode is created in the same
// transaction as its directory entry, which the directory's fsync commits. A SETATTR
// or LINK of such an object, and an object the server process may not open (a
// directory it may not read, a file it may neither read nor write), are made stable
// by syncfs(2) on the file system through the object's parent directory, or by
// sync(2) when that cannot be opened or is another file system.
//
// An fsync of a regular file writes back its data as well, UNSTABLE writes included:
// when it fails, the write verifier changes as when COMMIT's does (resetVerifier),
// since Linux reports the writeback error to that fsync alone and a later COMMIT
// would succeed. A failed fsync of a directory changes it not: it loses no file's
// data.
//
// WRITE with DATA_SYNC or FILE_SYNC and COMMIT are durable on every export, async or
// not: a client that asks for stable data gets it.

// syncCalls are the system calls that make changes stable. A Server calls them
// through these fields so that tests can see which objects were synced.
type syncCalls struct {
	fsync     func(fd int) error
	fdatasync func(fd int) error
	syncfs    func(fd int) error
	sync      func()
}

// osSync makes changes stable with the real system calls.
var osSync = syncCalls{fsync: unix.Fsync, fdatasync: unix.Fdatasync, syncfs: unix.Syncfs, sync: unix.Sync}

// metaSync reports whether modifying procedures make their changes stable before
// replying: not on an async export. Options.ReadOnly does not enter into it: a
// client list (SetClients) may let callers write to a Server that has it, and a
// caller that may not write changes nothing, its procedures failing before any sync.
func (s *Server) metaSync() bool { return !s.opts.Async }

// stableDir makes the entries of the open directory dir stable.
func (s *Server) stableDir(dir *object) error {
	if !s.metaSync() || dir.fd < 0 {
		return nil
	}
	return s.stableFD(dir.fd, dir.path)
}

// stableDirs makes the entries of the two directories of a RENAME stable, each once.
func (s *Server) stableDirs(from, to *object) error {
	if err := s.stableDir(from); err != nil {
		return err
	}
	if keyOf(&from.st) == keyOf(&to.st) {
		return nil
	}
	return s.stableDir(to)
}

// stableObject makes the object o (opened by resolving a handle) stable.
func (s *Server) stableObject(o *object) error {
	if !s.metaSync() {
		return nil
	}
	return s.stableFD(o.fd, o.path)
}

// stableNew makes the new object fd refers to (with attributes st, reached by the
// path p) stable, unless it is a symbolic link or special file (made stable by the
// directory's fsync, see above).
func (s *Server) stableNew(fd int, p string, st *unix.Statx_t) error {
	if !s.metaSync() || (!isReg(st) && !isDir(st)) {
		return nil
	}
	return s.stableFD(fd, p)
}

// stableFD fsyncs the object the descriptor fd (O_PATH, or open) refers to, reached
// by the path p. It opens the object for reading (a regular file the server may only
// write, for writing), after checking through fd that it is a regular file or a
// directory, so that no device is ever opened; an object it cannot open is made
// stable with its file system (stableFS).
func (s *Server) stableFD(fd int, p string) error {
	var st unix.Statx_t
	if err := statFD(fd, &st); err != nil {
		return err
	}
	nfd, err := -1, error(unix.EBADF)
	switch {
	case isDir(&st):
		nfd, err = unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	case isReg(&st):
		nfd, _, err = reopenFor(fd, accRead)
		if err != nil {
			nfd, _, err = reopenFor(fd, accWrite)
		}
	}
	if err != nil {
		return s.stableFS(parentPath(p), keyOf(&st).dev)
	}
	err = s.sys.fsync(nfd)
	unix.Close(nfd)
	if err != nil {
		if isReg(&st) {
			// The fsync wrote back the file's dirty pages too, data a client may
			// have written UNSTABLE: the writeback error it met is reported to no
			// later fsync (see resetVerifier), so COMMIT could not tell the client.
			s.resetVerifier(err)
		}
		return fmt.Errorf("nfsserver: fsync %q: %w", p, err)
	}
	return nil
}

// stableFS makes the whole file system dev stable: syncfs(2) through the directory
// dir (a path in the export) when it is on that file system and can be opened, else
// sync(2).
func (s *Server) stableFS(dir string, dev uint64) error {
	if pfd, err := s.openPath(dir); err == nil {
		fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(pfd)
		if err == nil {
			defer unix.Close(fd)
			var st unix.Statx_t
			if statFD(fd, &st) == nil && keyOf(&st).dev == dev {
				if err := s.sys.syncfs(fd); err != nil {
					return fmt.Errorf("nfsserver: syncfs %q: %w", dir, err)
				}
				return nil
			}
		}
	}
	s.sys.sync()
	return nil
}

#!/usr/bin/env python3
"""fcntl-locks.py FILE: POSIX byte-range locks (fcntl F_SETLK/F_GETLK) between two processes
on one file, as the NFSv4.1 workload (guest/tests/nfs41.sh) runs them on an NFS mount, where
every lock is a LOCK/LOCKT/LOCKU the server decides (the two processes are different lock
owners).  Prints one line per check; exit status 0 only if every check held:

  1. the parent write-locks bytes [0, 100)
  2. the child's F_SETLK of a write lock on [50, 60) fails with EAGAIN (or EACCES)
  3. the child's F_SETLK of a read lock on [200, 300) succeeds (no overlap)
  4. the child's F_GETLK on [0, 10) reports the parent's write lock, start 0, length 100
  5. the parent unlocks; then the child's F_SETLK of [50, 60) succeeds
"""
import errno
import fcntl
import os
import struct
import sys

# struct flock on x86_64 Linux: short l_type, short l_whence, off_t l_start, off_t l_len,
# pid_t l_pid, padded to 32 bytes.
FLOCK = "hhqqi4x"


def flock(kind, start, length):
    return struct.pack(FLOCK, kind, os.SEEK_SET, start, length, 0)


def setlk(fd, kind, start, length):
    """F_SETLK; returns 0 or the errno."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETLK, flock(kind, start, length))
        return 0
    except OSError as e:
        return e.errno


def child(path, go, done):
    fd = os.open(path, os.O_RDWR)
    ok = True

    def check(cond, what):
        nonlocal ok
        print(("ok: " if cond else "FAIL: ") + what, flush=True)
        ok = ok and cond

    e = setlk(fd, fcntl.F_WRLCK, 50, 10)
    check(e in (errno.EAGAIN, errno.EACCES),
          "second process F_SETLK write [50,60) conflicts: %s" % (errno.errorcode.get(e, e) if e else "granted"))
    e = setlk(fd, fcntl.F_RDLCK, 200, 100)
    check(e == 0, "second process F_SETLK read [200,300) granted (%s)" % (errno.errorcode.get(e, e) if e else "ok"))
    got = fcntl.fcntl(fd, fcntl.F_GETLK, flock(fcntl.F_WRLCK, 0, 10))
    kind, _, start, length, _ = struct.unpack(FLOCK, got)
    check(kind == fcntl.F_WRLCK and start == 0 and length == 100,
          "F_GETLK [0,10) reports type %d start %d len %d (want F_WRLCK 0 100)" % (kind, start, length))
    os.write(done, b"1")          # tell the parent to unlock
    os.read(go, 1)                # and wait until it has
    e = setlk(fd, fcntl.F_WRLCK, 50, 10)
    check(e == 0, "after the unlock, F_SETLK write [50,60) granted (%s)" % (errno.errorcode.get(e, e) if e else "ok"))
    setlk(fd, fcntl.F_UNLCK, 0, 0)
    os.close(fd)
    return ok


def main():
    path = sys.argv[1]
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"x" * 400)
    e = setlk(fd, fcntl.F_WRLCK, 0, 100)
    print(("ok: " if e == 0 else "FAIL: ") + "first process F_SETLK write [0,100)", flush=True)
    if e != 0:
        return 1
    go_r, go_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if child(path, go_r, done_w) else 1)
    os.read(done_r, 1)
    e = setlk(fd, fcntl.F_UNLCK, 0, 100)
    print(("ok: " if e == 0 else "FAIL: ") + "first process unlocks [0,100)", flush=True)
    os.write(go_w, b"1")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return 0 if e == 0 and os.waitstatus_to_exitcode(status) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

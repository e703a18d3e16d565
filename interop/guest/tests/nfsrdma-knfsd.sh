#!/bin/sh
# nfsrdma-knfsd [PROVIDER] [SECONDS]: knfsd exporting /export (tmpfs) over RDMA on port
# 20049 (siw or rxe on eth0) and TCP 2049, rpc.mountd on TCP 20048; prints LAB-READY for
# the host's client (interop/linuxnfs TestClientAgainstKnfsd) and waits for out/stop.
# Then it judges what the host's client left on knfsd's export with the guest's own
# tools: every file named in /out/nfsrdma-manifest has that sha256 (sha256sum -c), the
# workload's scratch entries are gone, and knfsd's NFSv3 per-procedure counters equal
# the calls the host's client sent (/out/nfsrdma-proc3).
. /lab/guest/lib.sh
P=${1:-siw}; S=${2:-300}
step "rdma up $P" rdma_up "$P" eth0
step "nfsd up (rdma 20049)" nfsd_up 20049
ready "knfsd rdma 20049, mountd tcp 20048 on $GUEST_IP via $P"
wait_stop "$S"
step "the host client's files match its manifest (sha256sum -c)" sh -c 'cd /export && sha256sum -c /out/nfsrdma-manifest'
step "scratch entries removed (many, a, b, abs)" sh -c '[ ! -e /export/nfsrdma/many ] && [ ! -e /export/nfsrdma/b ] && [ ! -e /export/nfsrdma/a ] && [ ! -L /export/nfsrdma/abs ]'
ls -la /export/nfsrdma
# knfsd's own NFSv3 per-procedure counters (count, then null getattr setattr lookup access
# readlink read write create mkdir symlink mknod remove rmdir rename link readdir
# readdirplus fsstat fsinfo pathconf commit) against the calls the host's client sent
say "knfsd: $(grep '^proc3' /proc/net/rpc/nfsd)"
say "host:  $(cat /out/nfsrdma-proc3 2>/dev/null)"
step "knfsd counted exactly the NFSv3 calls the host client sent (/proc/net/rpc/nfsd proc3)" \
  sh -c '[ "$(grep "^proc3" /proc/net/rpc/nfsd)" = "$(cat /out/nfsrdma-proc3)" ]'
dmesg | grep -iE 'siw|svcrdma|rpcrdma' | tail -20
finish

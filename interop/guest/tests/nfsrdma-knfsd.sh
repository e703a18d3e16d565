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
# Before Linux 6.3 these counters are a shared unsigned int bumped with a plain ++ by
# every nfsd thread (svc_generic_init_request; 6.3 made them per-CPU, "SUNRPC: Use
# per-CPU counters to tally server RPC counts"), so concurrent calls of one procedure
# on two vCPUs can lose an increment: there knfsd may count up to 1% fewer (at least
# 1) of a procedure than were sent, never more; from 6.3 on the counts must be equal.
say "knfsd: $(grep '^proc3' /proc/net/rpc/nfsd)"
say "host:  $(cat /out/nfsrdma-proc3 2>/dev/null)"
step "knfsd counted the NFSv3 calls the host client sent (/proc/net/rpc/nfsd proc3; exact from Linux 6.3)" \
  sh -c 'grep "^proc3" /proc/net/rpc/nfsd > /tmp/knfsd-proc3 &&
    awk -v rel="$(uname -r)" "
      NR == FNR { for (i = 1; i <= NF; i++) k[i] = \$i; nk = NF; next }
      {
        split(rel, v, \"[.-]\"); racy = v[1] < 6 || (v[1] == 6 && v[2] < 3)
        if (NF != nk || \$2 != k[2]) { print \"procedure count differs\"; exit 1 }
        for (i = 3; i <= NF; i++) {
          lost = \$i - k[i]; slack = racy ? int(\$i / 100) : 0; if (racy && slack < 1) slack = 1
          if (lost < 0 || lost > slack) { print \"procedure \" i - 3 \": knfsd \" k[i] \", host \" \$i; exit 1 }
          if (lost > 0) print \"procedure \" i - 3 \": knfsd counted \" lost \" fewer (racy counter before 6.3)\"
        }
      }" /tmp/knfsd-proc3 /out/nfsrdma-proc3'
dmesg | grep -iE 'siw|svcrdma|rpcrdma' | tail -20
finish

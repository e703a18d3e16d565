#!/usr/bin/env bash
# knfsd-client.sh NFSRDMA: host side of run-knfsd.sh.  Runs the nfsrdma client commands
# against the lab guest's knfsd (10.0.2.15: NFS over RDMA on 20049 over siw, NFS over TCP
# on 2049, rpc.mountd on TCP 20048, export /export) and checks every byte that comes back.
set -euo pipefail
NFSRDMA=$1
S=10.0.2.15
C=(-rdma-port 20049 -tcp-port 2049 -mountport 20048 -timeout 5m)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
say() { echo "== $*"; }
say "mkdir over RDMA"
"$NFSRDMA" mkdir "${C[@]}" $S:/export/nfsrdma
for n in 0 1 3 4095 4097 65537 131071 131073 1048577 8388607; do
  head -c $n /dev/urandom > "$T/f$n"
  say "put f$n over RDMA, get it back over RDMA and TCP"
  "$NFSRDMA" put "${C[@]}" "$T/f$n" $S:/export/nfsrdma/
  "$NFSRDMA" get "${C[@]}" $S:/export/nfsrdma/f$n "$T/rdma-f$n"
  "$NFSRDMA" get "${C[@]}" -proto tcp $S:/export/nfsrdma/f$n "$T/tcp-f$n"
  cmp "$T/f$n" "$T/rdma-f$n"
  cmp "$T/f$n" "$T/tcp-f$n"
done
say "ls over RDMA"
"$NFSRDMA" ls "${C[@]}" $S:/export/nfsrdma | tee "$T/ls"
grep -q "^10 entries" "$T/ls"
say "rm over RDMA"
"$NFSRDMA" rm "${C[@]}" $S:/export/nfsrdma/f0
"$NFSRDMA" ls "${C[@]}" $S:/export/nfsrdma | grep -q "^9 entries"
say "bench: knfsd's largest READ/WRITE here is 128 KiB (1 GiB guest)"
"$NFSRDMA" bench "${C[@]}" -duration 1s -file-size 16MiB -sizes 4KiB,128KiB $S:/export/nfsrdma
say "knfsd client checks passed"

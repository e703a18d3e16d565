#!/bin/sh
# nfs-connect TARGET PORT VERS [expect=fail|ok]: the kernel NFS client (xprtrdma over siw)
# tries "mount -o vers=VERS,proto=rdma,port=PORT TARGET:/" (soft, short timeouts, at most
# 60 s or until the harness creates /out/stop), for a host program under test that only has
# to accept the connection and judge what arrives.  expect=fail (default): the mount result is logged, not counted, so the case's
# pass/fail comes from the host program.  expect=ok: the mount must succeed (a real server).
. /lab/guest/lib.sh
T=${1:-$HOSTSVC_IP}; PORT=${2:-20049}; V=${3:-4.1}; EXPECT=fail
for a in "$@"; do case $a in expect=*) EXPECT=${a#expect=} ;; esac; done
step "rdma up siw" rdma_up siw eth0
step "modprobe rpcrdma" modprobe rpcrdma
modprobe nfsv4; modprobe nfsv3
opts="vers=$V,proto=rdma,port=$PORT,soft,timeo=50,retrans=1"
[ "$V" = 3 ] && opts="$opts,nolock"
if [ "$EXPECT" = ok ]; then
  step "mount -o $opts $T:/" timeout 120 mount -t nfs -o "$opts" "$T:/" /mnt/nfs && umount /mnt/nfs
else
  say "== mount -o $opts $T:/ (result not counted: the host program judges)"
  timeout 60 mount -t nfs -o "$opts" "$T:/" /mnt/nfs &
  M=$!
  # the harness creates /out/stop once the host program has finished
  n=0; while kill -0 $M 2>/dev/null && [ ! -e /out/stop ] && [ $n -lt 120 ]; do sleep 0.5; n=$((n+1)); done
  if kill -0 $M 2>/dev/null; then say "host program done: stopping the mount attempt"; kill $M; fi
  wait $M; say "mount rc=$?"
  mountpoint -q /mnt/nfs && umount /mnt/nfs
fi
dmesg | grep -iE 'siw|rpcrdma|rdma' | tail -20
finish

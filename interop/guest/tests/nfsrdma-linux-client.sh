#!/bin/sh
# nfsrdma-linux-client TARGET [ENTRIES]: the kernel NFSv3 client (xprtrdma over siw) mounts
# our NFS server on the host (interop/linuxnfs TestLinuxClientMountsServer: NFS over RDMA on
# TARGET:20049, NFS and MOUNT over TCP on TARGET:2049) with
#   mount -t nfs -o vers=3,proto=rdma,port=20049,mountport=2049,mountproto=tcp,nolock
# and runs a workload: files of odd sizes up to 8 MiB - 1 written, caches dropped, compared
# (cmp and sha256) and left on the export with a manifest (/out/nfsrdma-manifest) the host
# checks; 16 files written at once, then read at once; a directory of ENTRIES (default
# 2000) entries listed with ls and ls -l; symlinks, a hard link, renames across
# directories, removal; umount.  Then /out/nfsrdma-done ("failures N") tells the host to
# judge the wire, and the guest waits for out/stop.
. /lab/guest/lib.sh
T=${1:-$HOSTSVC_IP}; ENTRIES=${2:-2000}
M=/mnt/nfs
SIZES="0 1 3 4095 4097 65537 131071 1048575 1048577 3145733 8388607"
step "rdma up siw" rdma_up siw eth0
modprobe rpcrdma; modprobe nfsv3
mkdir -p $M
opts="vers=3,proto=rdma,port=20049,mountport=2049,mountproto=tcp,nolock"

files() {
  for n in $SIZES; do
    head -c "$n" /dev/urandom > /tmp/f$n || return 1
    cp /tmp/f$n $M/f$n || return 1
  done
  sync; echo 3 > /proc/sys/vm/drop_caches
  : > /tmp/manifest
  for n in $SIZES; do
    cmp /tmp/f$n $M/f$n || return 1
    [ "$(stat -c %s $M/f$n)" = "$n" ] || { say "f$n: size $(stat -c %s $M/f$n)"; return 1; }
    a=$(sha256sum < /tmp/f$n | cut -d' ' -f1); b=$(sha256sum < $M/f$n | cut -d' ' -f1)
    [ "$a" = "$b" ] || { say "f$n: sha256 $b, wrote $a"; return 1; }
    echo "$a  f$n" >> /tmp/manifest
  done
  cp /tmp/manifest /out/nfsrdma-manifest
  say "f8388607 sha256 $(cut -d' ' -f1 < /tmp/manifest | tail -1)"
}
parallel() { # 16 writers at once, then 16 readers at once after dropping caches
  head -c 1048579 /dev/urandom > /tmp/par || return 1
  i=0; while [ $i -lt 16 ]; do dd if=/tmp/par of=$M/par$i bs=64k conv=fsync 2>/dev/null & i=$((i+1)); done
  wait
  echo 3 > /proc/sys/vm/drop_caches
  i=0; while [ $i -lt 16 ]; do cmp /tmp/par $M/par$i > /tmp/par$i.cmp 2>&1 & i=$((i+1)); done
  wait
  i=0; while [ $i -lt 16 ]; do
    [ -s /tmp/par$i.cmp ] && { cat /tmp/par$i.cmp; return 1; }
    [ "$(stat -c %s $M/par$i)" = 1048579 ] || return 1
    i=$((i+1))
  done
  rm $M/par* || return 1
  say "16 x 1 MiB+3 written and read back concurrently"
}
listing() {
  mkdir $M/many || return 1
  i=0; while [ $i -lt "$ENTRIES" ]; do : > $M/many/an-entry-with-a-longish-name-$i || return 1; i=$((i+1)); done
  echo 3 > /proc/sys/vm/drop_caches
  n=$(ls $M/many | wc -l); say "ls: $n entries"; [ "$n" = "$ENTRIES" ] || return 1
  echo 3 > /proc/sys/vm/drop_caches
  n=$(ls -l $M/many | grep -c longish-name-); say "ls -l: $n entries"; [ "$n" = "$ENTRIES" ] || return 1
}
namespace() {
  ln -s /etc/hostname $M/abs && [ "$(readlink $M/abs)" = /etc/hostname ] || return 1
  ln -s ../f4097 $M/many/rel && cmp $M/many/rel /tmp/f4097 || return 1
  ln $M/f3 $M/many/hard && [ "$(stat -c %h $M/f3)" = 2 ] || return 1
  mkdir $M/a $M/b || return 1
  cp /tmp/f65537 $M/a/x || return 1
  mv $M/a/x $M/b/y && mv $M/a $M/b/a2 || return 1
  echo 3 > /proc/sys/vm/drop_caches
  cmp $M/b/y /tmp/f65537 && [ -d $M/b/a2 ] && [ ! -e $M/a ] || return 1
  rm -r $M/many $M/b $M/abs || return 1
  [ ! -e $M/many ] && [ ! -e $M/b ] && [ "$(stat -c %h $M/f3)" = 1 ] || return 1
  ls -la $M
}

if step "mount -o $opts $T:/export" timeout 120 mount -t nfs -o "$opts" "$T:/export" $M; then
  step "xprt: rdma in /proc/self/mountstats" xprt_is_rdma $M
  step "files 0 B .. 8 MiB-1 written, caches dropped, cmp + sha256" files
  step "16 concurrent writers, then 16 concurrent readers (1 MiB+3 each)" parallel
  step "$ENTRIES-entry directory listed (ls, ls -l)" listing
  step "symlinks, hard link, renames across directories, rm -r" namespace
  cp /proc/self/mountstats /out/mountstats.txt
  grep -E 'xprt:' /proc/self/mountstats
  step "umount" umount $M
fi
[ -f /tmp/lab-fails ] && LAB_FAILS=$(cat /tmp/lab-fails)
echo "failures $LAB_FAILS" > /out/nfsrdma-done.tmp && mv /out/nfsrdma-done.tmp /out/nfsrdma-done
wait_stop 120
dmesg | grep -iE 'rpcrdma|nfs:|siw' | tail -20
finish

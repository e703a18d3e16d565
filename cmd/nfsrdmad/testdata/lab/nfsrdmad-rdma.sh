#!/bin/sh
# nfsrdmad-rdma TARGET RDMAPORT MOUNTPORT PATH [ibverbs]: the kernel NFSv3 client (xprtrdma
# over siw) mounts an nfsrdmad on the host with proto=rdma (NFS over RDMA on RDMAPORT, MOUNT over TCP
# on MOUNTPORT, nolock), exactly as nfsrdmad's start-up line says, and runs a workload:
# files of odd sizes up to 8 MiB - 1 written and compared after dropping caches, a
# directory of 3000 entries listed, symlinks, a hard link, renames across directories,
# truncate, chmod, removal, umount.  With "ibverbs", nfsrdmad runs in the guest itself on
# siw0 through the cgo provider (/lab/nfsrdmad-ib, built with -tags ibverbs) and TARGET
# should be the guest's address.  Guest script of the qemu lab (interop/): see
# cmd/nfsrdmad/testdata/lab/README.md.
. /lab/guest/lib.sh
T=${1:-10.0.2.100}; PORT=${2:-20049}; MPORT=${3:-2049}; EP=${4:-/export}
step "rdma up siw" rdma_up siw eth0
modprobe rpcrdma; modprobe nfsv3
server_up() { # nfsrdmad in the guest on siw0 through verbs/ibverbs
  ulimit -l unlimited 2>/dev/null
  mkdir -p /tmp/export
  chown 65534:65534 /tmp/export # -export squashes root (this guest's writes) to nobody
  /lab/nfsrdmad-ib -export /tmp/export -export-path "$EP" -provider ibverbs -device siw0 \
    -rdma "$T:$PORT" -tcp "$T:$MPORT" -state /tmp/nfsrdmad-state >/out/nfsrdmad.out 2>/out/nfsrdmad.log &
  echo $! > /tmp/nfsrdmad.pid
  n=0; while ! grep -q "^Mount it" /out/nfsrdmad.out 2>/dev/null; do
    n=$((n+1)); [ $n -gt 100 ] && { cat /out/nfsrdmad.log; return 1; }; sleep 0.2
  done
  cat /out/nfsrdmad.out
}
[ "$5" = ibverbs ] && step "nfsrdmad -provider ibverbs on siw0" server_up
mkdir -p /mnt/nfs
opts="vers=3,proto=rdma,port=$PORT,mountport=$MPORT,mountproto=tcp,nolock"
files() {
  m=/mnt/nfs
  for n in 0 1 3 4095 4097 65537 1048575 1048577 3145733 8388607; do
    head -c $n /dev/urandom > /tmp/f$n || return 1
    cp /tmp/f$n $m/f$n || return 1
  done
  sync; echo 3 > /proc/sys/vm/drop_caches
  for n in 0 1 3 4095 4097 65537 1048575 1048577 3145733 8388607; do
    cmp /tmp/f$n $m/f$n || return 1
    [ "$(stat -c %s $m/f$n)" = $n ] || return 1
  done
  md5sum /tmp/f8388607 $m/f8388607
}
listing() {
  m=/mnt/nfs
  mkdir $m/many || return 1
  i=0; while [ $i -lt 3000 ]; do : > $m/many/a-rather-long-entry-name-$i; i=$((i+1)); done
  echo 3 > /proc/sys/vm/drop_caches
  n=$(ls $m/many | wc -l); echo "listed $n"; [ "$n" = 3000 ] || return 1
  n=$(ls -l $m/many | grep -c entry-name-); echo "listed long $n"; [ "$n" = 3000 ] || return 1
}
namespace() {
  m=/mnt/nfs
  ln -s /etc/hostname $m/abs && [ "$(readlink $m/abs)" = /etc/hostname ] || return 1
  ln -s ../f4097 $m/many/rel && cmp $m/many/rel /tmp/f4097 || return 1
  ln $m/f3 $m/many/hard && [ "$(stat -c %h $m/f3)" = 2 ] || return 1
  mkdir $m/a $m/b || return 1
  mv $m/f1 $m/a/x && mv $m/a/x $m/b/y && mv $m/a $m/b/a2 || return 1
  cmp $m/b/y /tmp/f1 && [ -d $m/b/a2 ] || return 1
  chmod 600 $m/f65537 && [ "$(stat -c %a $m/f65537)" = 600 ] || return 1
  truncate -s 100 $m/f65537 && [ "$(stat -c %s $m/f65537)" = 100 ] || return 1
  rm -r $m/many $m/b $m/abs || return 1
  [ ! -e $m/many ] || return 1
  ls -la $m; df $m
}
if step "mount -o $opts $T:$EP" timeout 120 mount -t nfs -o "$opts" "$T:$EP" /mnt/nfs; then
  step "xprt: rdma in mountstats" xprt_is_rdma /mnt/nfs
  step "files 0 B .. 8 MiB-1 written, caches dropped, compared" files
  step "3000-entry directory listed (ls, ls -l)" listing
  step "symlinks, hard link, renames, chmod, truncate, rm -r" namespace
  grep -A3 "nfs.*/mnt/nfs" /proc/self/mountstats | head -5
  step "umount" umount /mnt/nfs
fi
if [ "$5" = ibverbs ]; then
  kill -INT "$(cat /tmp/nfsrdmad.pid)"; sleep 2
  step "nfsrdmad stopped cleanly" grep -q "nfsrdmad: stopped" /out/nfsrdmad.log
  grep -E "WARN|ERROR|stopped" /out/nfsrdmad.log | tail -5
fi
dmesg | grep -iE 'rpcrdma|nfs' | tail -20
finish

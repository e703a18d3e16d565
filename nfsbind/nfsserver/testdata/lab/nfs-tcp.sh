#!/bin/sh
# nfs-tcp TARGET PORT PATH: the kernel NFSv3 client mounts a Go nfsserver on the host over
# TCP (NFS and MOUNT on one port, no rpcbind) and runs a workload.  PORT=rpcbind mounts
# without port options, so mount.nfs asks the rpcbind on TARGET:111 for both ports.
. /lab/guest/lib.sh
T=${1:-10.0.2.100}; PORT=${2:-2049}; EP=${3:-/export}
modprobe nfsv3
mkdir -p /mnt/nfs
opts="vers=3,proto=tcp,port=$PORT,mountport=$PORT,mountproto=tcp,nolock"
[ "$PORT" = rpcbind ] && opts="vers=3,proto=tcp,nolock"
workload() {
  d=/mnt/nfs  # (step() also uses $d for its label)
  for kb in 0 1 5 1023 1025 3071 8191; do
    dd if=/dev/urandom of=/tmp/f$kb bs=1k count=$kb 2>/dev/null || return 1
  done
  dd if=/dev/urandom of=/tmp/odd bs=1 count=8388607 2>/dev/null || head -c 8388607 /dev/urandom > /tmp/odd
  for kb in 0 1 5 1023 1025 3071 8191; do cp /tmp/f$kb $d/f$kb || return 1; done
  cp /tmp/odd $d/odd || return 1
  sync; echo 3 > /proc/sys/vm/drop_caches
  for kb in 0 1 5 1023 1025 3071 8191; do cmp /tmp/f$kb $d/f$kb || return 1; done
  cmp /tmp/odd $d/odd || return 1
  md5sum /tmp/odd $d/odd
  mkdir $d/many || return 1
  i=0; while [ $i -lt 2000 ]; do : > $d/many/entry-$i; i=$((i+1)); done
  echo 3 > /proc/sys/vm/drop_caches
  n=$(ls $d/many | wc -l); echo "listed $n"; [ "$n" = 2000 ] || return 1
  n=$(ls -l $d/many | grep -c entry-); echo "listed long $n"; [ "$n" = 2000 ] || return 1
  ln -s /etc/passwd $d/abs || return 1
  ln -s ../f5 $d/many/rel || return 1
  [ "$(readlink $d/abs)" = /etc/passwd ] || return 1
  cmp $d/many/rel /tmp/f5 || return 1
  ln $d/f5 $d/many/hard || return 1
  [ "$(stat -c %h $d/f5)" = 2 ] || return 1
  mkdir $d/a $d/b || return 1
  mv $d/f1 $d/a/x && mv $d/a/x $d/b/y && mv $d/a $d/b/a2 || return 1
  cmp $d/b/y /tmp/f1 || return 1
  [ -d $d/b/a2 ] || return 1
  rm -r $d/many || return 1
  rm $d/b/y $d/abs && rmdir $d/b/a2 $d/b || return 1
  chmod 600 $d/f5 && [ "$(stat -c %a $d/f5)" = 600 ] || return 1
  truncate -s 100 $d/f5 && [ "$(stat -c %s $d/f5)" = 100 ] || return 1
  ls -la $d
  df $d
}
if step "mount -o $opts $T:$EP" timeout 120 mount -t nfs -o "$opts" "$T:$EP" /mnt/nfs; then
  step "workload" workload
  grep -A3 "nfs.*/mnt/nfs" /proc/self/mountstats | head -5
  step "umount" umount /mnt/nfs
fi
dmesg | grep -iE 'nfs' | tail -20
finish

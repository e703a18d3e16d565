#!/bin/sh
# nfs-tcp-tar TARGET PORT PATH: the kernel NFSv3 client mounts a Go nfsserver over TCP
# and unpacks a tree with tar (owners, modes, times, symlinks, hard links), compares it
# with the source, runs parallel writers, and cleans up with rm -rf.
. /lab/guest/lib.sh
T=${1:-10.0.2.100}; PORT=${2:-2049}; EP=${3:-/export}
modprobe nfsv3
mkdir -p /mnt/nfs
opts="vers=3,proto=tcp,port=$PORT,mountport=$PORT,mountproto=tcp,nolock"
[ "$PORT" = rpcbind ] && opts="vers=3,proto=tcp,nolock"
meta() { (cd "$1" && find . \( -type d -printf '%y %m %U %G - %l %p\n' \) -o -printf '%y %m %U %G %s %l %p\n' | sort); }  # directory sizes differ between file systems
tarwork() {
  m=/mnt/nfs
  mkdir -p /tmp/src/tree && cp -a /usr/share/doc /tmp/src/tree/ && cp -a /etc /tmp/src/tree/ 2>/dev/null
  ln /tmp/src/tree/etc/passwd /tmp/src/tree/passwd-hardlink
  chown -R 1000:1000 /tmp/src/tree/doc 2>/dev/null
  touch -d '2001-02-03 04:05:06' /tmp/src/tree/etc/hostname
  echo "files: $(find /tmp/src/tree | wc -l)"
  tar -C /tmp/src -cf /tmp/src.tar tree || return 1
  tar -C $m -xpf /tmp/src.tar || return 1
  sync; echo 3 > /proc/sys/vm/drop_caches
  diff -r --no-dereference /tmp/src/tree $m/tree || return 1
  meta /tmp/src/tree > /tmp/meta.src; meta $m/tree > /tmp/meta.nfs
  diff /tmp/meta.src /tmp/meta.nfs || return 1
  [ "$(stat -c %Y $m/tree/etc/hostname)" = "$(stat -c %Y /tmp/src/tree/etc/hostname)" ] || return 1
  [ "$(stat -c %h $m/tree/passwd-hardlink)" = 2 ] || return 1
  for i in 1 2 3 4; do dd if=/dev/urandom of=/tmp/p$i bs=64k count=$((i*8)) 2>/dev/null; done
  for i in 1 2 3 4; do cp /tmp/p$i $m/p$i & done; wait
  sync; echo 3 > /proc/sys/vm/drop_caches
  for i in 1 2 3 4; do cmp /tmp/p$i $m/p$i || return 1; done
  rm -rf $m/tree $m/p1 $m/p2 $m/p3 $m/p4 || return 1
  [ -z "$(ls -A $m)" ] || { ls -la $m; return 1; }
}
if step "mount -o $opts $T:$EP" timeout 120 mount -t nfs -o "$opts" "$T:$EP" /mnt/nfs; then
  step "tar workload" tarwork
  step "umount" umount /mnt/nfs
fi
dmesg | grep -iE 'nfs' | tail -20
finish

#!/bin/sh
# nfsrdmad-ibverbs PROVIDER [FILES] [STALL] [LOGLEVEL]: nfsrdmad with the cgo provider (-provider ibverbs, verbs/ibverbs)
# runs in the guest on PROVIDER's device (siw -> siw0, rxe -> rxe0), bound to the guest's address,
# and the guest's own kernel NFSv3 client mounts it with proto=rdma (NFS over RDMA on 20049, MOUNT
# over TCP on 2049, nolock) and runs a workload: files of odd sizes up to 8 MiB - 1 written and
# compared after dropping caches, a directory of FILES (default 3000) entries listed, symlinks, a
# hard link, renames across directories, chmod, truncate, removal, umount; mountstats must say
# "xprt: rdma"; nfsrdmad must stop cleanly on SIGINT.  The binary is built on the host with
# -tags ibverbs by the case's HOST_BG into the run folder (/out/nfsrdmad); this script waits for it.
# If the workload is not done STALL seconds (default 600) after the mount, nfsrdmad gets SIGQUIT so
# that its goroutine dump lands in /out/nfsrdmad.log, and the test fails at once (its processes are
# killed, the hard mount is left behind).
# The workload is the one of cmd/nfsrdmad/testdata/lab/nfsrdmad-rdma.sh (run by hand there).
. /lab/guest/lib.sh
P=${1:-siw}; N=${2:-3000}; STALL=${3:-600}; LOG=${4:-info}; D=${P}0
T=$GUEST_IP; PORT=20049; MPORT=2049; EP=/export
BIN=/out/nfsrdmad
step "rdma up $P" rdma_up "$P" eth0
modprobe rpcrdma; modprobe nfsv3
waitfile() { # waitfile PATH SECS
  n=0; while [ ! -e "$1" ] && [ "$n" -lt "$(( $2 * 2 ))" ]; do sleep 0.5; n=$((n+1)); done
  [ -e "$1" ]
}
step "host-built nfsrdmad (-tags ibverbs) present" waitfile "$BIN" 400
server_up() { # nfsrdmad in the guest on $D through verbs/ibverbs
  ulimit -l unlimited 2>/dev/null
  mkdir -p /tmp/export
  chown 65534:65534 /tmp/export # -export squashes root (this guest's writes) to nobody
  "$BIN" -export /tmp/export -export-path "$EP" -provider ibverbs -device "$D" \
    -rdma "$T:$PORT" -tcp "$T:$MPORT" -state /tmp/nfsrdmad-state -log-level "$LOG" >/out/nfsrdmad.out 2>/out/nfsrdmad.log &
  echo $! > /tmp/nfsrdmad.pid
  n=0; while ! grep -q "^Mount it" /out/nfsrdmad.out 2>/dev/null; do
    n=$((n+1)); [ $n -gt 300 ] && { cat /out/nfsrdmad.log; return 1; }; sleep 0.2
    kill -0 "$(cat /tmp/nfsrdmad.pid)" 2>/dev/null || { cat /out/nfsrdmad.log; return 1; }
  done
  cat /out/nfsrdmad.out
}
step "nfsrdmad -provider ibverbs -device $D on $T:$PORT" server_up
mkdir -p /mnt/nfs
opts="vers=3,proto=rdma,port=$PORT,mountport=$MPORT,mountproto=tcp,nolock"
SIZES="0 1 3 4095 4097 65537 1048575 1048577 3145733 8388607"
files() {
  m=/mnt/nfs
  for n in $SIZES; do
    head -c $n /dev/urandom > /tmp/f$n || return 1
    cp /tmp/f$n $m/f$n || return 1
  done
  sync; echo 3 > /proc/sys/vm/drop_caches
  for n in $SIZES; do
    cmp /tmp/f$n $m/f$n || return 1
    [ "$(stat -c %s $m/f$n)" = $n ] || return 1
  done
  md5sum /tmp/f8388607 $m/f8388607
}
listing() {
  m=/mnt/nfs
  mkdir $m/many || return 1
  i=0; while [ $i -lt "$N" ]; do : > $m/many/a-rather-long-entry-name-$i; i=$((i+1)); done
  echo 3 > /proc/sys/vm/drop_caches
  n=$(ls $m/many | wc -l); echo "listed $n"; [ "$n" = "$N" ] || return 1
  n=$(ls -l $m/many | grep -c entry-name-); echo "listed long $n"; [ "$n" = "$N" ] || return 1
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
# the export on the server side must hold exactly what the client left there
server_view() {
  e=/tmp/export
  [ ! -e $e/many ] && [ ! -e $e/b ] && [ ! -e $e/abs ] || return 1
  cmp /tmp/f8388607 $e/f8388607 && [ "$(stat -c %s $e/f65537)" = 100 ] || return 1
  ls -la $e
}
if step "mount -o $opts $T:$EP" timeout 120 mount -t nfs -o "$opts" "$T:$EP" /mnt/nfs; then
  MAIN=$$
  (sleep "$STALL"; [ -e /tmp/workload-done ] || { say "FAIL: workload stalled for $STALL s: SIGQUIT to nfsrdmad (goroutine dump in nfsrdmad.log)"
    kill -QUIT "$(cat /tmp/nfsrdmad.pid)"; sleep 2; grep -A12 "on /mnt/nfs" /proc/self/mountstats; dmesg | tail -20
    echo 1 > /tmp/lab-rc; kids=$(pgrep -P "$MAIN"); kill -9 "$MAIN" $kids; }) &
  WD=$!
  step "xprt: rdma in mountstats" xprt_is_rdma /mnt/nfs
  step "files 0 B .. 8 MiB-1 written, caches dropped, compared" files
  step "$N-entry directory listed (ls, ls -l)" listing
  step "symlinks, hard link, renames, chmod, truncate, rm -r" namespace
  grep -A3 "nfs.*/mnt/nfs" /proc/self/mountstats | head -5
  : > /tmp/workload-done
  kill $(pgrep -P "$WD") "$WD" 2>/dev/null # the watchdog holds the console pipe open
  step "umount" umount /mnt/nfs
  step "export as the server sees it" server_view
fi
kill -INT "$(cat /tmp/nfsrdmad.pid)"
n=0; while kill -0 "$(cat /tmp/nfsrdmad.pid)" 2>/dev/null && [ $n -lt 60 ]; do sleep 0.5; n=$((n+1)); done
step "nfsrdmad stopped cleanly" grep -q "nfsrdmad: stopped" /out/nfsrdmad.log
grep -E "WARN|ERROR|stopped" /out/nfsrdmad.log | tail -5
rdma resource show 2>/dev/null | head -10
dmesg | grep -iE 'rpcrdma|nfs|siw|rxe' | tail -20
finish

#!/bin/sh
# nfs41 SERVER [entries=N] [pcap] [steps=a+b+...] [stall=S]: the NFSv4.1-over-RDMA workload of issue #13, run by the guest's
# kernel client (xprtrdma over siw) against
#   SERVER=knfsd   the guest's own knfsd (svcrdma, /export on tmpfs), mounted as 10.0.2.15:/export
#                  over siw on eth0 (the reference: this workload must pass here first);
#   SERVER=ADDR    a server on the host at ADDR (our nfsrdmad / interop/linuxnfs harness), port 20049,
#                  export /export or the path the host wrote to /out/nfs41-export.
# The mount is  mount -t nfs -o vers=4.1,proto=rdma,port=20049 SERVER:/export /mnt/nfs  and the
# steps are:
#   mount          xprt: rdma and vers=4.1 in /proc/self/mountstats
#   files          odd sizes 0 B .. 8 MiB-1 written, caches dropped, cmp + sha256
#   listing        N (entries=, default 1000) entries, more than one inline READDIR reply holds,
#                  listed with ls and ls -l after dropping caches, names compared
#   links          hard link (link count 2, then 1), absolute and relative symlinks, readlink
#   renames        in a directory, across directories, a directory, over an existing file
#   attributes     truncate (shrink, grow), chmod, chown, utimes (touch -a/-m), checked by stat
#                  after dropping caches; the content after truncation compared
#   direct         dd oflag=direct (64 KiB blocks, then an odd 12345-byte block at an
#                  unaligned offset), dd iflag=direct read back, cmp
#   parallel       8 writers of distinct files and 8 writers of one file at distinct
#                  (unaligned) offsets at once, then compared after dropping caches
#   flock          flock(1): a second process's flock -n -x / -s fails while one holds it
#   fcntl          guest/fcntl-locks.py: F_SETLK conflict -> EAGAIN, disjoint range granted,
#                  F_GETLK reports the holder's range, granted after the unlock
#   remount        umount + mount; every file's sha256 and the attributes again (the first
#                  mount's /proc/self/mountstats is kept as /out/mountstats-first.txt)
# The files left on the export are listed with their sha256 in /out/nfs41-manifest (names
# relative to the export).  knfsd: the guest checks them on /export itself after the last
# umount.  Then /out/nfsrdma-done ("failures N") tells the host's judge (interop/linuxnfs)
# to look at the export, the wire and the capture; with a host server (ADDR) the guest
# then waits for out/stop.  "pcap": tcpdump of port 20049 (lo for
# knfsd, eth0 for ADDR) to /out/nfs41.pcap.  "steps=files+remount": only those steps (mount
# and umount always run).  A step still running after S seconds (stall=, default 150) gets
# the kernel's blocked-task dump (sysrq w), ps with wait channels, the stacks of D-state
# tasks and the pending RPC tasks (debugfs sunrpc) written to /out/nfs41-stall.txt.
. /lab/guest/lib.sh
SERVER=${1:-knfsd}; shift 2>/dev/null
ENTRIES=1000 PCAP="" STEPS="" STALL=150
for a in "$@"; do
  case $a in
    pcap) PCAP=1 ;; entries=*) ENTRIES=${a#entries=} ;; steps=*) STEPS=",$(echo "${a#steps=}" | tr + ,)," ;;
    stall=*) STALL=${a#stall=} ;; *) say "nfs41: unknown argument $a"; exit 2 ;;
  esac
done
M=/mnt/nfs
SIZES="0 1 3 4095 4097 65537 131071 1048575 1048577 3145733 8388607"
OPTS="vers=4.1,proto=rdma,port=20049" EXP=/export

step "rdma up siw" rdma_up siw eth0
if [ "$SERVER" = knfsd ]; then
  step "nfsd up (rdma 20049)" nfsd_up 20049
  T=$GUEST_IP; IF=lo
else
  modprobe rpcrdma; modprobe nfsv4
  T=$SERVER; IF=eth0
  # a host server whose export is not /export names its path in the run folder
  [ -s /out/nfs41-export ] && EXP=$(cat /out/nfs41-export)
fi
mkdir -p $M
if [ -n "$PCAP" ]; then
  # One captured frame per TCP segment as sent: GRO off (a gro_max_size of 0 merges
  # nothing), and the case boots the NIC without guest TSO (LAB_NIC_OPTS), so no frame
  # holds several segments. Wireshark 4.0's iwarp_mpa reads one frame's FPDUs only
  # from a segment start; merged frames hid FPDUs from it (a READ reply in 1 of 507).
  [ "$IF" = eth0 ] && { ip link set dev eth0 gro_max_size 0 || echo "gro_max_size not set"; }
  tcpdump -Z root -i $IF -s 0 -B 16384 -U -w /tmp/nfs41.pcap 'tcp port 20049' 2>/tmp/tcpdump.err &
  TCPDUMP=$!
  n=0; while ! grep -q listening /tmp/tcpdump.err && [ $n -lt 50 ]; do sleep 0.2; n=$((n+1)); done
fi

# source data, in /tmp (not steps)
for n in $SIZES; do head -c "$n" /dev/urandom > /tmp/f$n; done
: > /tmp/manifest

# manifest NAME...: append "sha256  NAME" of the files on the mount (names relative to it)
manifest() { (cd $M && sha256sum "$@") >> /tmp/manifest; }
dropc() { sync; echo 3 > /proc/sys/vm/drop_caches; }
same() { # same A B: byte-identical, and the same sha256
  cmp "$1" "$2" || return 1
  [ "$(sha256sum < "$1")" = "$(sha256sum < "$2")" ] || { say "$2: sha256 differs"; return 1; }
}
is_41() { awk -v mp="$M" '$1=="device" && $5==mp {m=1; next} $1=="device"{m=0} m && /^[[:space:]]*opts:/ {print; if ($0 ~ /vers=4\.1/) ok=1} END{exit !ok}' /proc/self/mountstats; }
mounted() { xprt_is_rdma $M && is_41; }

files() {
  for n in $SIZES; do cp /tmp/f$n $M/f$n || return 1; done
  dropc
  for n in $SIZES; do
    same /tmp/f$n $M/f$n || return 1
    [ "$(stat -c %s $M/f$n)" = "$n" ] || { say "f$n: size $(stat -c %s $M/f$n)"; return 1; }
    manifest f$n
  done
  say "f8388607 sha256 $(sha256sum < $M/f8388607 | cut -d' ' -f1)"
}
listing() {
  mkdir $M/many || return 1
  i=0; : > /tmp/names
  while [ $i -lt "$ENTRIES" ]; do
    : > $M/many/an-entry-with-a-rather-longish-name-$i || return 1
    echo an-entry-with-a-rather-longish-name-$i >> /tmp/names; i=$((i+1))
  done
  sort /tmp/names > /tmp/names.sorted
  dropc
  ls $M/many | sort > /tmp/ls.out || return 1
  say "ls: $(wc -l < /tmp/ls.out) entries"; cmp /tmp/names.sorted /tmp/ls.out || return 1
  dropc
  n=$(ls -l $M/many | grep -c longish-name-); say "ls -l: $n entries"; [ "$n" = "$ENTRIES" ] || return 1
}
links() {
  mkdir -p $M/l || return 1
  cp /tmp/f65537 $M/l/orig || return 1
  ln $M/l/orig $M/l/hard || return 1
  ln -s /etc/hostname $M/l/abs || return 1
  ln -s ../f4097 $M/l/rel || return 1
  dropc
  [ "$(stat -c %h $M/l/orig)" = 2 ] && [ "$(stat -c %i $M/l/orig)" = "$(stat -c %i $M/l/hard)" ] || { say "link count $(stat -c %h $M/l/orig)"; return 1; }
  same /tmp/f65537 $M/l/hard || return 1
  [ "$(readlink $M/l/abs)" = /etc/hostname ] && [ "$(readlink $M/l/rel)" = ../f4097 ] || return 1
  [ "$(stat -c %F $M/l/rel)" = "symbolic link" ] || return 1
  same /tmp/f4097 $M/l/rel || return 1
  rm $M/l/orig || return 1
  dropc
  [ "$(stat -c %h $M/l/hard)" = 1 ] && same /tmp/f65537 $M/l/hard || return 1
  manifest l/hard
}
renames() {
  mkdir -p $M/r/a $M/r/b/deep || return 1
  cp /tmp/f4095 $M/r/a/x && cp /tmp/f3 $M/r/b/victim && cp /tmp/f131071 $M/r/b/deep/z || return 1
  mv $M/r/a/x $M/r/a/x2 || return 1                 # within a directory
  mv $M/r/a/x2 $M/r/b/y || return 1                 # across directories
  mv $M/r/b/y $M/r/b/victim || return 1             # over an existing file
  mv $M/r/b/deep $M/r/a/deep2 || return 1           # a directory across directories
  dropc
  [ ! -e $M/r/a/x ] && [ ! -e $M/r/a/x2 ] && [ ! -e $M/r/b/y ] && [ ! -e $M/r/b/deep ] || { ls -lR $M/r; return 1; }
  same /tmp/f4095 $M/r/b/victim && same /tmp/f131071 $M/r/a/deep2/z || return 1
  [ "$(ls $M/r/b | tr '\n' ' ')" = "victim " ] || { ls -la $M/r/b; return 1; }
  manifest r/b/victim r/a/deep2/z
}
ATTRS="640 4242 4343 5000 981173106"
attributes() {
  cp /tmp/f4097 $M/attr || return 1
  truncate -s 1000 $M/attr && truncate -s 5000 $M/attr || return 1
  chmod 0640 $M/attr && chown 4242:4343 $M/attr || return 1
  touch -m -d @981173106 $M/attr && touch -a -d @1012345678 $M/attr || return 1
  dropc
  a=$(stat -c '%a %u %g %s %Y %X' $M/attr)
  say "stat: $a"
  [ "$a" = "$ATTRS 1012345678" ] || { say "want $ATTRS 1012345678"; return 1; }
  { head -c 1000 /tmp/f4097; head -c 4000 /dev/zero; } > /tmp/attr.want
  same /tmp/attr.want $M/attr || return 1
  manifest attr
}
direct() {
  head -c 1310720 /dev/urandom > /tmp/direct || return 1
  head -c 12345 /dev/urandom > /tmp/odd || return 1
  dd if=/tmp/direct of=$M/direct bs=65536 oflag=direct 2>/tmp/dd.err || { cat /tmp/dd.err; return 1; }
  dd if=/tmp/odd of=$M/direct bs=12345 oflag=direct,seek_bytes seek=1310720 conv=notrunc 2>/tmp/dd.err || { cat /tmp/dd.err; return 1; }
  cat /tmp/direct /tmp/odd > /tmp/direct.want
  dd if=$M/direct of=/tmp/direct.back bs=4096 iflag=direct 2>/tmp/dd.err || { cat /tmp/dd.err; return 1; }
  same /tmp/direct.want /tmp/direct.back || return 1
  dropc
  same /tmp/direct.want $M/direct || return 1
  manifest direct
}
parallel() {
  mkdir -p $M/par || return 1
  i=0; while [ $i -lt 8 ]; do head -c 1048579 /dev/urandom > /tmp/par$i; i=$((i+1)); done
  head -c 800024 /dev/urandom > /tmp/shared     # 8 x 100003
  : > $M/par/shared || return 1
  # 16 writers at once; wait for them by pid (a bare "wait" would also wait for tcpdump
  # and the stall watcher)
  pids="" i=0; while [ $i -lt 8 ]; do
    dd if=/tmp/par$i of=$M/par/f$i bs=65536 conv=fsync 2>/tmp/par$i.err & pids="$pids $!"
    dd if=/tmp/shared of=$M/par/shared bs=100003 skip=$i seek=$i count=1 conv=notrunc,fsync 2>/tmp/shared$i.err & pids="$pids $!"
    i=$((i+1))
  done
  r=0; for p in $pids; do wait $p || r=1; done
  [ $r = 0 ] || { cat /tmp/par*.err /tmp/shared*.err; return 1; }
  dropc
  i=0; while [ $i -lt 8 ]; do
    same /tmp/par$i $M/par/f$i || return 1
    i=$((i+1))
  done
  same /tmp/shared $M/par/shared || return 1
  manifest par/f0 par/f1 par/f2 par/f3 par/f4 par/f5 par/f6 par/f7 par/shared
  say "8 x 1 MiB+3 files and 8 x 100003 bytes of one file written at once"
}
flocks() {
  : > $M/flockf || return 1
  rm -f /tmp/flock-held /tmp/flock-release
  flock -x $M/flockf sh -c ': > /tmp/flock-held; while [ ! -e /tmp/flock-release ]; do sleep 0.2; done' &
  holder=$!
  n=0; while [ ! -e /tmp/flock-held ] && [ $n -lt 300 ]; do sleep 0.2; n=$((n+1)); done
  [ -e /tmp/flock-held ] || { say "the holder never got the lock"; : > /tmp/flock-release; wait $holder; return 1; }
  r=0
  if flock -n -x $M/flockf true; then say "a second exclusive flock was granted"; r=1; fi
  if flock -n -s $M/flockf true; then say "a shared flock was granted beside an exclusive one"; r=1; fi
  : > /tmp/flock-release
  wait $holder || { say "the holder failed"; r=1; }
  flock -n -x $M/flockf true || { say "no exclusive flock after the holder left"; r=1; }
  return $r
}
fcntls() { python3 /lab/guest/fcntl-locks.py $M/fcntlf; }
remount() {
  cp /proc/self/mountstats /out/mountstats-first.txt   # the first mount's counters
  umount $M || return 1
  timeout 120 mount -t nfs -o "$OPTS" "$T:$EXP" $M || return 1
  mounted || return 1
  (cd $M && sha256sum -c --quiet /tmp/manifest) || return 1
  say "$(wc -l < /tmp/manifest) files: sha256 as written"
  if grep -q '  attr$' /tmp/manifest; then
    a=$(stat -c '%a %u %g %s %Y' $M/attr); say "attr after remount: $a"
    [ "$a" = "$ATTRS" ] || return 1
  fi
  if grep -q '  l/hard$' /tmp/manifest; then [ "$(readlink $M/l/rel)" = ../f4097 ] || return 1; fi
  if [ -d $M/many ]; then [ "$(ls $M/many | wc -l)" = "$ENTRIES" ] || return 1; fi
}

# wstep NAME DESC FUNC: a workload step, unless steps= leaves it out; watched for stalls
wstep() {
  case $STEPS in ''|*",$1,"*) ;; *) return 0 ;; esac
  name=$1; shift
  ( trap 'kill $s 2>/dev/null; exit 0' TERM
    sleep "$STALL" & s=$!; wait $s
    say "STALL: step $name still running after $STALL s; blocked tasks in /out/nfs41-stall.txt"
    { echo "== step $name, $STALL s"; echo w > /proc/sysrq-trigger; sleep 1; dmesg | tail -150
      ps -eo pid,stat,wchan:32,args
      for p in $(ps -eo pid=,stat= | awk '$2 ~ /^D/ {print $1}'); do echo "== $p $(cat /proc/$p/comm)"; cat /proc/$p/stack; done
      mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
      for f in /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks; do echo "== $f"; cat $f; done; } >> /out/nfs41-stall.txt 2>&1 ) &
  watch=$!
  step "$@"; r=$?
  kill $watch 2>/dev/null; wait $watch 2>/dev/null
  return $r
}

t=$(now)
if step "mount -o $OPTS $T:$EXP" timeout 120 mount -t nfs -o "$OPTS" "$T:$EXP" $M; then
  say "mount took $(awk -v a="$(now)" -v b="$t" 'BEGIN{print a-b}') s"
  wstep mounted "mount: xprt: rdma, vers=4.1" mounted
  wstep files "files 0 B .. 8 MiB-1 written, caches dropped, cmp + sha256" files
  wstep listing "$ENTRIES-entry directory listed (ls, ls -l)" listing
  wstep links "hard link, absolute and relative symlinks" links
  wstep renames "renames: in a directory, across, a directory, over a file" renames
  wstep attributes "attributes: truncate, chmod, chown, utimes, checked with stat" attributes
  wstep direct "O_DIRECT writes and reads (dd oflag/iflag=direct)" direct
  wstep parallel "parallel writers: 8 files, and one file at 8 offsets" parallel
  wstep flocks "flock(1): a second process is refused" flocks
  wstep fcntls "fcntl F_SETLK/F_GETLK between two processes" fcntls
  wstep remount "remount: sha256 of every file and the attributes again" remount
  cp /tmp/manifest /out/nfs41-manifest
  cp /proc/self/mountstats /out/mountstats.txt
  grep -E 'xprt:|opts:' /proc/self/mountstats
  step "umount" umount $M
fi
if [ -n "$PCAP" ]; then
  sleep 1; kill $TCPDUMP; wait $TCPDUMP 2>/dev/null; cat /tmp/tcpdump.err
  cp /tmp/nfs41.pcap /out/nfs41.pcap
fi
if [ "$SERVER" = knfsd ]; then
  step "the server's view: sha256 of every file on /export" sh -c "cd /export && sha256sum -c --quiet /tmp/manifest"
  say "knfsd: $(grep -E '^proc4ops' /proc/net/rpc/nfsd | cut -c1-200)"
fi
# the host's judge (interop/linuxnfs) waits for this marker; a host server is then
# stopped, and tells us (out/stop)
[ -f /tmp/lab-fails ] && LAB_FAILS=$(cat /tmp/lab-fails)
echo "failures $LAB_FAILS" > /out/nfsrdma-done.tmp && mv /out/nfsrdma-done.tmp /out/nfsrdma-done
[ "$SERVER" = knfsd ] || wait_stop 120
dmesg | grep -iE 'rpcrdma|nfs|siw|lockd' | tail -40
finish

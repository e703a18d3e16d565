#!/usr/bin/env bash
# run.sh: the Linux kernel as the judge of nfsrdmad over RDMA.  Builds nfsrdmad, starts it
# inside a fresh lab network namespace on 10.0.2.100 (NFS over RDMA on 20049 with the
# software iWARP provider, NFS and MOUNT over TCP on 2049), boots the qemu lab guest
# (interop/, Debian 12, Linux 6.1) whose NFSv3 client mounts it with proto=rdma over siw
# and runs nfsrdmad-rdma.sh, then stops nfsrdmad (SIGINT) and removes the namespace.
# Needs root and a built lab (interop/build.sh).  The lab's own directory is not touched:
# it is copied to a temporary directory next to this script's guest test.
# Exit status 0 when the guest workload passed and nfsrdmad stopped cleanly.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
NS=${NS:-nfsrdmadlab$$}
WORK=$(mktemp -d /tmp/nfsrdmad-lab.XXXXXX)
[[ -e "$ROOT/interop/.cache/rootfs.ext4" ]] || { echo "run.sh: the lab is not built: sudo $ROOT/interop/build.sh" >&2; exit 2; }
mkdir "$WORK/lab" "$WORK/export"
# -export squashes root to nobody (65534), as knfsd does: the guest writes as root, so
# nobody owns the export.
chown 65534:65534 "$WORK/export"
for f in "$ROOT"/interop/*; do cp -a "$f" "$WORK/lab/"; done
ln -s "$ROOT/interop/.cache" "$WORK/lab/.cache"
cp "$HERE/nfsrdmad-rdma.sh" "$WORK/lab/guest/tests/"
(cd "$ROOT" && "$GO" build -o "$WORK/nfsrdmad" ./cmd/nfsrdmad)
"$WORK/lab/netns.sh" up "$NS"
SRV=""
cleanup() {
  [[ -n "$SRV" ]] && kill -INT "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
  "$WORK/lab/netns.sh" down "$NS"
}
trap cleanup EXIT
ip netns exec "$NS" "$WORK/nfsrdmad" -export "$WORK/export" -export-path /export \
  -rdma 10.0.2.100:20049 -tcp 10.0.2.100:2049 -state "$WORK/state" -log-level debug \
  > "$WORK/nfsrdmad.out" 2> "$WORK/nfsrdmad.log" &
SRV=$!
for _ in $(seq 50); do grep -q "^Mount it" "$WORK/nfsrdmad.out" && break; sleep 0.1; done
cat "$WORK/nfsrdmad.out"
rc=0
"$WORK/lab/boot.sh" --out "$WORK/run" --netns "$NS" nfsrdmad-rdma 10.0.2.100 20049 2049 /export || rc=$?
grep -E '^\[[0-9.]+\] (==|ok|FAIL)|^listed|LAB-RESULT' "$WORK/run/console.log" || true
kill -INT "$SRV"; srv_rc=0; wait "$SRV" || srv_rc=$?; SRV=""
grep -E 'stopped|ERROR' "$WORK/nfsrdmad.log" || true
[[ $srv_rc == 0 ]] || { echo "run.sh: nfsrdmad exited with status $srv_rc" >&2; rc=1; }
echo "run.sh: $([[ $rc == 0 ]] && echo PASS || echo FAIL); logs in $WORK"
exit $rc

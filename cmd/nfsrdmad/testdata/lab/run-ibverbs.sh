#!/usr/bin/env bash
# run-ibverbs.sh: nfsrdmad with the cgo provider (-provider ibverbs, verbs/ibverbs) on the
# lab guest's siw0, mounted by the guest's own kernel NFS client with proto=rdma, running
# the same workload as run.sh (nfsrdmad-rdma.sh ... ibverbs).  Needs root, a built lab
# (interop/build.sh), cgo and libibverbs-dev/librdmacm-dev on the host.  interop/ itself is
# not modified.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
WORK=$(mktemp -d /tmp/nfsrdmad-ibverbs.XXXXXX)
[[ -e "$ROOT/interop/.cache/rootfs.ext4" ]] || { echo "run-ibverbs.sh: the lab is not built: sudo $ROOT/interop/build.sh" >&2; exit 2; }
mkdir "$WORK/lab"
for f in "$ROOT"/interop/*; do cp -a "$f" "$WORK/lab/"; done
ln -s "$ROOT/interop/.cache" "$WORK/lab/.cache"
cp "$HERE/nfsrdmad-rdma.sh" "$WORK/lab/guest/tests/"
(cd "$ROOT" && CGO_ENABLED=1 "$GO" build -tags ibverbs -o "$WORK/lab/nfsrdmad-ib" ./cmd/nfsrdmad)
rc=0
"$WORK/lab/boot.sh" --out "$WORK/run" --quiet nfsrdmad-rdma 10.0.2.15 20049 2049 /export ibverbs > "$WORK/boot.log" 2>&1 || rc=$?
grep -E '^\[[0-9.]+\] (==|ok|FAIL)|^listed|LAB-RESULT|NFSv3|mount -t' "$WORK/run/console.log" || true
tail -2 "$WORK/boot.log"
echo "run-ibverbs.sh: $([[ $rc == 0 ]] && echo PASS || echo FAIL); logs in $WORK"
exit $rc

#!/usr/bin/env bash
# run-knfsd.sh: the nfsrdma client tool against the Linux kernel's NFS server.  Boots the
# qemu lab guest (interop/, Linux 6.1) with knfsd serving /export over RDMA (siw, port
# 20049) and TCP, and runs knfsd-client.sh on the host inside the lab's network
# namespace once the guest is ready: put/get of odd sizes up to 8 MiB-1 over RDMA (read
# back over RDMA and TCP, compared), ls, rm, and a short RDMA vs TCP bench.  Needs root
# and a built lab (interop/build.sh).  interop/ itself is not modified.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
NS=${NS:-nfsrdmaknfsd$$}
WORK=$(mktemp -d /tmp/nfsrdma-knfsd.XXXXXX)
[[ -e "$ROOT/interop/.cache/rootfs.ext4" ]] || { echo "run-knfsd.sh: the lab is not built: sudo $ROOT/interop/build.sh" >&2; exit 2; }
mkdir "$WORK/lab"
for f in "$ROOT"/interop/*; do cp -a "$f" "$WORK/lab/"; done
ln -s "$ROOT/interop/.cache" "$WORK/lab/.cache"
(cd "$ROOT" && "$GO" build -o "$WORK/nfsrdma" ./cmd/nfsrdma)
rc=0
"$WORK/lab/boot.sh" --out "$WORK/run" --netns "$NS" \
  --ready-cmd "bash '$HERE/knfsd-client.sh' '$WORK/nfsrdma' > '$WORK/client.log' 2>&1" \
  nfs-server siw 600 > "$WORK/boot.log" 2>&1 || rc=$?
cat "$WORK/client.log" 2>/dev/null || true
tail -3 "$WORK/boot.log"
echo "run-knfsd.sh: $([[ $rc == 0 ]] && echo PASS || echo FAIL); logs in $WORK"
exit $rc

#!/bin/sh
# knfsd-tcp [SECONDS]: the guest's knfsd exporting /export over TCP, NFS on 2049 and
# rpc.mountd pinned to 20048, for a Go client on the host (boot.sh --hostfwd 22049:2049
# --hostfwd 22048:20048 --ready-cmd '...').
. /lab/guest/lib.sh
S=${1:-300}
modprobe rpcrdma 2>/dev/null
step "nfsd up" nfsd_up 20049
killall rpc.mountd 2>/dev/null; sleep 0.5
step "mountd on 20048" rpc.mountd --no-udp -p 20048
echo "hello from the guest's knfsd" > /export/hello.txt
ss -tlnp 2>/dev/null | head -20 || true
ready "knfsd tcp 2049, mountd 20048"
wait_stop "$S"
ls -la /export | head -20
finish

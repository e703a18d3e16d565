#!/bin/sh
# ibverbs PROVIDER MODE: runs the host-built verbs/ibverbs test binary (/out/ibverbs.test, built
# by the case's HOST_BG, which this script waits for; /out/rdmabench in mode rdmabench) against
# PROVIDER (siw or rxe) on eth0.
#   suite  the verbs conformance suite and device tests over loopback through the device, then
#          the provider's benchmarks; log in /out/ibverbs-suite.log
#   peer   listen on $GUEST_IP:7471 for the host's verbs/soft client (TestInteropPeer), after
#          printing LAB-READY; log in /out/ibverbs-peer.log
#   rdmabench  cmd/rdmabench (/out/rdmabench, built with -tags ibverbs) -provider ibverbs,
#          server and client processes, with the raw TCP baseline over the same eth0
#   bench  TestTwoProcessBench: a server process and a client process over the device (RDMA
#          Write/Read bandwidth, Send/Recv round trips); logs in /out/ibverbs-bench-*.log
. /lab/guest/lib.sh
P=${1:-siw}; MODE=${2:-suite}; D=${P}0
step "rdma up $P" rdma_up "$P" eth0
ulimit -l unlimited 2>/dev/null
waitfile() { # waitfile PATH SECS
  n=0; while [ ! -e "$1" ] && [ "$n" -lt "$(( $2 * 2 ))" ]; do sleep 0.5; n=$((n+1)); done
  [ -e "$1" ]
}
BIN=/out/ibverbs.test
[ "$MODE" = rdmabench ] && BIN=/out/rdmabench
step "host-built test binary present" waitfile "$BIN" 400
run_suite() {
  IBVERBS_ADDR=$GUEST_IP IBVERBS_REQUIRE=1 "$BIN" -test.v -test.count=1 -test.timeout=900s \
    -test.run '^(TestConformance|TestDeviceLimits|TestOpenConfigErrors|TestForkStatus|TestPrivateDataSizes)$' >/out/ibverbs-suite.log 2>&1
  r=$?; grep -E '^(=== RUN|--- |    --- |PASS|FAIL|ok)|SKIP|verbstest.go|_test.go' /out/ibverbs-suite.log | grep -v '^=== RUN' | head -80
  return $r
}
run_bench() {
  IBVERBS_ADDR=$GUEST_IP IBVERBS_REQUIRE=1 "$BIN" -test.run '^$' -test.bench . -test.benchtime 3000x \
    -test.timeout=600s >/out/ibverbs-bench.log 2>&1
  r=$?; cat /out/ibverbs-bench.log; return $r
}
run_peer() {
  IBVERBS_ADDR=$GUEST_IP IBVERBS_PEER_LISTEN=$GUEST_IP:7471 IBVERBS_REQUIRE=1 timeout 300 "$BIN" -test.v -test.count=1 \
    -test.run '^TestInteropPeer$' >/out/ibverbs-peer.log 2>&1 &
  pid=$!
  sleep 1
  ready "ibverbs peer on $GUEST_IP:7471 via $D"
  wait "$pid"; r=$?; cat /out/ibverbs-peer.log; return $r
}
run_bench2() {
  IBVERBS_ADDR=$GUEST_IP IBVERBS_BENCH_LISTEN=$GUEST_IP:7472 timeout 300 "$BIN" -test.v -test.count=1 \
    -test.run '^TestTwoProcessBench$' >/out/ibverbs-bench-server.log 2>&1 &
  spid=$!
  IBVERBS_ADDR=$GUEST_IP IBVERBS_BENCH_DIAL=$GUEST_IP:7472 timeout 300 "$BIN" -test.v -test.count=1 \
    -test.run '^TestTwoProcessBench$' >/out/ibverbs-bench-client.log 2>&1
  r=$?; wait "$spid"; rs=$?
  cat /out/ibverbs-bench-client.log /out/ibverbs-bench-server.log
  [ "$r" = 0 ] && [ "$rs" = 0 ]
}
run_rdmabench() {
  "$BIN" -provider ibverbs -device "$D" -listen "$GUEST_IP:7471" >/out/rdmabench-server.log 2>&1 &
  spid=$!
  sleep 2
  timeout 600 "$BIN" -provider ibverbs -device "$D" -connect "$GUEST_IP:7471" -duration 3s -rounds 3 >/out/rdmabench.log 2>&1
  r=$?; cat /out/rdmabench.log; kill "$spid" 2>/dev/null; cat /out/rdmabench-server.log; return $r
}
case $MODE in
  suite) step "verbs conformance suite on $D (verbs/ibverbs)" run_suite
         step "verbs/ibverbs benchmarks on $D" run_bench ;;
  peer)  step "verbs/ibverbs peer on $D for the host's verbs/soft" run_peer ;;
  bench) step "verbs/ibverbs benchmark between two processes on $D" run_bench2 ;;
  rdmabench) step "rdmabench -provider ibverbs, server and client processes on $D" run_rdmabench ;;
  *) say "unknown mode $MODE"; LAB_FAILS=$((LAB_FAILS+1)); echo "$LAB_FAILS" > /tmp/lab-fails ;;
esac
rdma resource show 2>/dev/null | head -20
dmesg | grep -iE 'siw|rxe' | tail -20
finish

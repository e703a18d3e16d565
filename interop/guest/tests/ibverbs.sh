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
#   perftest  rdma-core's perftest (ib_send_lat, ib_write_bw) and then cmd/rdmabench -provider
#          ibverbs over the same device in the same guest; prints PERFTEST-RATIO lines
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
case $MODE in rdmabench|perftest) BIN=/out/rdmabench ;; esac
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
# perftest_pair LOG CMD ARGS...: a perftest server and client over rdma_cm on $D; the client's
# output goes to /out/LOG.
perftest_pair() {
  log=$1; shift
  "$@" -d "$D" -R -F >/tmp/"$log"-server.log 2>&1 &
  spid=$!
  sleep 2
  timeout 180 "$@" -d "$D" -R -F "$GUEST_IP" >/out/"$log".log 2>&1
  r=$?; wait "$spid"; cat /out/"$log".log; return $r
}
# perftest_col LOG SIZE COL: column COL of the result row for message size SIZE
perftest_col() { awk -v s="$2" -v c="$3" '$1 == s && NF >= c { print $c; exit }' /out/"$1".log; }
run_perftest() {
  r=0
  say "clock source: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  perftest_pair send-lat ib_send_lat -p 18520 -s 64 -n 5000 || r=1
  perftest_pair write-bw-64k ib_write_bw -p 18521 -s 65536 -n 2000 || r=1
  perftest_pair write-bw-1m ib_write_bw -p 18522 -s 1048576 -n 200 || r=1
  "$BIN" -provider ibverbs -device "$D" -listen "$GUEST_IP:7471" >/out/rdmabench-server.log 2>&1 &
  spid=$!
  sleep 2
  timeout 600 "$BIN" -provider ibverbs -device "$D" -connect "$GUEST_IP:7471" -duration 6s -rounds 3 >/out/rdmabench.log 2>&1 || r=1
  kill "$spid" 2>/dev/null
  cat /out/rdmabench.log
  # The same without adaptive CQ polling (ibverbs.Config.CQPoll < 0: every wait blocks in
  # the completion channel), for comparison in the same guest.
  "$BIN" -provider ibverbs -device "$D" -cq-poll -1ns -listen "$GUEST_IP:7473" >/out/rdmabench-nopoll-server.log 2>&1 &
  spid=$!
  sleep 2
  timeout 600 "$BIN" -provider ibverbs -device "$D" -cq-poll -1ns -connect "$GUEST_IP:7473" -duration 3s -rounds 3 -no-tcp >/out/rdmabench-nopoll.log 2>&1 || r=1
  kill "$spid" 2>/dev/null
  cat /out/rdmabench-nopoll.log
  # ib_send_lat reports half a round trip (t_typical, column 5, usec); ib_write_bw reports
  # MiB/s (BW average, column 4); rdmabench reports full round trips and MB/s (10^6).
  : >/out/perftest-ratios.txt
  lat=$(perftest_col send-lat 64 5)
  w64=$(perftest_col write-bw-64k 65536 4)
  w1m=$(perftest_col write-bw-1m 1048576 4)
  ours_lat=$(awk '/^Send\/Recv RTT/ { print $5; exit }' /out/rdmabench.log)
  ours_w64=$(awk '/^RDMA Write/ && $3 == 64 { print $5; exit }' /out/rdmabench.log)
  ours_w1m=$(awk '/^RDMA Write/ && $3 == 1024 { print $5; exit }' /out/rdmabench.log)
  awk -v a="$ours_lat" -v b="$lat" 'BEGIN { if (a > 0 && b > 0) printf "PERFTEST-RATIO send-lat-64B rdmabench_rtt_us=%s ib_send_lat_rtt_us=%.2f ratio=%.2f\n", a, 2*b, a/(2*b); else { print "PERFTEST-RATIO send-lat-64B missing"; exit 1 } }' >>/out/perftest-ratios.txt || r=1
  awk -v a="$ours_w64" -v b="$w64" 'BEGIN { if (a > 0 && b > 0) printf "PERFTEST-RATIO write-bw-64KiB rdmabench_MBps=%s ib_write_bw_MBps=%.1f ratio=%.2f\n", a, b*1.048576, a/(b*1.048576); else { print "PERFTEST-RATIO write-bw-64KiB missing"; exit 1 } }' >>/out/perftest-ratios.txt || r=1
  awk -v a="$ours_w1m" -v b="$w1m" 'BEGIN { if (a > 0 && b > 0) printf "PERFTEST-RATIO write-bw-1MiB rdmabench_MBps=%s ib_write_bw_MBps=%.1f ratio=%.2f\n", a, b*1.048576, a/(b*1.048576); else { print "PERFTEST-RATIO write-bw-1MiB missing"; exit 1 } }' >>/out/perftest-ratios.txt || r=1
  nopoll_lat=$(awk '/^Send\/Recv RTT/ { print $5; exit }' /out/rdmabench-nopoll.log)
  awk -v a="$nopoll_lat" -v b="$lat" 'BEGIN { if (a > 0 && b > 0) printf "PERFTEST-RATIO send-lat-64B-cqpoll-off rdmabench_rtt_us=%s ib_send_lat_rtt_us=%.2f ratio=%.2f\n", a, 2*b, a/(2*b); else print "PERFTEST-RATIO send-lat-64B-cqpoll-off missing" }' >>/out/perftest-ratios.txt
  cat /out/perftest-ratios.txt
  return $r
}
case $MODE in
  perftest) step "perftest, then rdmabench -provider ibverbs, on $D" run_perftest ;;
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

// Package gonfsinterop holds interoperability tests and peer benchmarks for nfsbind:
// github.com/willscott/go-nfs-client, an independent NFSv3 client implementation,
// drives the nfsserver TCP side, and BenchmarkPeers compares nfsserver with
// github.com/willscott/go-nfs (the peer baseline) through nfsclient. It is a separate
// module so that these test-only dependencies (and theirs: rasky/go-xdr, go-billy,
// x/net, ...) stay out of the main module's go.mod. BenchmarkPeersTwoProcess runs the
// same rows with each server in a process of its own, as nfsrdma bench meets nfsrdmad.
//
//	cd nfsbind/gonfsinterop && go test -race . && go test -run '^$' -bench Peers -count 5 . | tee peers.txt
//	benchstat -col /peer peers.txt
//
// System calls per call, with setup cancelled out (two runs, difference / 10000):
//
//	go test -c -o /tmp/peers.test .
//	for n in 2000 12000; do strace -f -c -e 'trace=!futex' -o st.$n /tmp/peers.test -test.run '^$' \
//	  -test.bench 'Peers/op=READ/size=4KiB/qd=32/peer=nfsserver-rdma$' -test.benchtime ${n}x; done
package gonfsinterop

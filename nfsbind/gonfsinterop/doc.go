// Package gonfsinterop holds interoperability tests and peer benchmarks for nfsbind:
// github.com/willscott/go-nfs-client, an independent NFSv3 client implementation,
// drives the nfsserver TCP side, and BenchmarkPeers compares nfsserver with
// github.com/willscott/go-nfs (the peer baseline) through nfsclient. It is a separate
// module so that these test-only dependencies (and theirs: rasky/go-xdr, go-billy,
// x/net, ...) stay out of the main module's go.mod.
//
//	cd nfsbind/gonfsinterop && go test -race . && go test -run '^$' -bench Peers -count 5 . | tee peers.txt
//	benchstat -col /peer peers.txt
package gonfsinterop

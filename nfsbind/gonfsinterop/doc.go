// Package gonfsinterop holds interoperability tests that drive the nfsserver TCP side
// with github.com/willscott/go-nfs-client, an independent NFSv3 client implementation.
// It is a separate module so that this test-only dependency (and its own dependency,
// github.com/rasky/go-xdr) stays out of the main module's go.mod.
package gonfsinterop

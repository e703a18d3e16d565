package nfs4state

import "github.com/go-rpcrdma/rpcrdma/internal/stabledir"

// syncDir makes the entries of directory dir stable: fsync of the directory, so that
// a rename into it survives a crash. A variable, so that tests can see it called and
// make it fail.
var syncDir = stabledir.SyncDir

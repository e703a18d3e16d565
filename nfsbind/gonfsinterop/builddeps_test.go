//go:build linux

package gonfsinterop

// nfsrdma_test.go builds cmd/nfsrdma inside this module, so this module's go.sum must
// hold everything that command links, including what only its in-process server
// (cmd/nfsrdmad/daemon) uses, such as package metrics and its Prometheus client. This
// import keeps `go mod tidy` from dropping those entries.
import _ "github.com/go-rpcrdma/rpcrdma/cmd/nfsrdmad/daemon"

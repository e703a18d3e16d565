//go:build ibverbs && linux && cgo

package main

import (
	"flag"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/ibverbs"
)

var device = flag.String("device", "", "RDMA device for -provider ibverbs, e.g. rxe0 (default: the only one)")

func init() {
	openers["ibverbs"] = func() (verbs.Device, error) { return ibverbs.Open(ibverbs.Config{Name: *device}) }
}

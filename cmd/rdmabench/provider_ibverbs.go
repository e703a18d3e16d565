//go:build ibverbs && linux && cgo

package main

import (
	"flag"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/ibverbs"
)

var (
	device = flag.String("device", "", "RDMA device for -provider ibverbs, e.g. rxe0 (default: the only one)")
	cqPoll = flag.Duration("cq-poll", 0, "for -provider ibverbs: how long a CQ is polled after activity before blocking (ibverbs.Config.CQPoll; 0: the default, negative: never)")
)

func init() {
	openers["ibverbs"] = func() (verbs.Device, error) { return ibverbs.Open(ibverbs.Config{Name: *device, CQPoll: *cqPoll}) }
}

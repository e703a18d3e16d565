//go:build ibverbs && linux && cgo

package main

import (
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/ibverbs"
)

func init() {
	openers["ibverbs"] = func() (verbs.Device, error) { return ibverbs.Open(ibverbs.Config{Name: *device}) }
}

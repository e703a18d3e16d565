//go:build linux && ibverbs && cgo

package daemon

import (
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/ibverbs"
)

func init() {
	openIBVerbs = func(name, addr string) (verbs.Device, error) {
		if name != "" {
			addr = ""
		}
		return ibverbs.Open(ibverbs.Config{Name: name, Addr: addr})
	}
}

//go:build ibverbs && linux && cgo

package providers

import (
	// The libibverbs provider, registered as "ibverbs".
	_ "github.com/go-rpcrdma/rpcrdma/verbs/ibverbs"
)

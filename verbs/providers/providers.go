// Package providers registers every verbs provider this binary is built with, so
// that verbs.OpenProvider can open any of them by name: import it for its side
// effect.
//
//	import _ "github.com/go-rpcrdma/rpcrdma/verbs/providers"
//	dev, err := verbs.OpenProvider("soft", verbs.ProviderConfig{})
//
// verbs/soft is always there; verbs/ibverbs is added in binaries built with the
// build tag ibverbs (and cgo, on Linux).
package providers

import (
	// The software iWARP provider, registered as "soft".
	_ "github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

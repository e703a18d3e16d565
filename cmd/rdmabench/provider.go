package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

var provider = flag.String("provider", "soft", "verbs provider: soft, or ibverbs when built with -tags ibverbs")

// openers maps -provider names to device constructors; provider_ibverbs.go
// adds "ibverbs" when the command is built with the build tag ibverbs.
var openers = map[string]func() (verbs.Device, error){
	"soft": func() (verbs.Device, error) { return soft.New(soft.Config{CRC: *crc, MaxFPDU: *maxFPDU}), nil },
}

func openDevice() (verbs.Device, error) {
	open, ok := openers[*provider]
	if !ok {
		var names []string
		for n := range openers {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("-provider %q: not built in (have %s; ibverbs needs go build -tags ibverbs)", *provider, strings.Join(names, ", "))
	}
	return open()
}

package main

import (
	"flag"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	_ "github.com/go-rpcrdma/rpcrdma/verbs/providers" // every provider built in, for -provider
)

var (
	provider = flag.String("provider", "soft", "verbs provider: "+strings.Join(verbs.ProviderNames(), ", ")+" (ibverbs only when built with -tags ibverbs)")
	device   = flag.String("device", "", "RDMA device for -provider ibverbs, e.g. rxe0 (default: the only one)")
	cqPoll   = flag.Duration("cq-poll", 0, "for -provider ibverbs: how long a CQ is polled after activity before blocking (ibverbs.Config.CQPoll; 0: the default, negative: never)")
)

// openDevice opens the -provider's device through the verbs provider registry.
func openDevice() (verbs.Device, error) {
	return verbs.OpenProvider(*provider, verbs.ProviderConfig{Device: *device, CRC: *crc, MaxFPDU: *maxFPDU, CQPoll: *cqPoll})
}

//go:build ibverbs && linux && cgo

package ibverbs

import (
	"net/netip"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

func init() {
	verbs.RegisterProvider("ibverbs", func(c verbs.ProviderConfig) (verbs.Device, error) {
		cfg := Config{Name: c.Device, CQPoll: c.CQPoll}
		if c.Device == "" {
			if ip, err := netip.ParseAddr(c.Addr); err == nil && !ip.IsUnspecified() {
				cfg.Addr = c.Addr
			}
		}
		return Open(cfg)
	})
}

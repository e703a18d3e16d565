package verbs

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ProviderConfig is what OpenProvider hands a provider. Each provider reads the
// fields that apply to it and ignores the others.
type ProviderConfig struct {
	// Device names the device to open, as the provider lists them (ibverbs: "rxe0",
	// "siw0", "mlx5_0"). Empty: the device that owns Addr, or the only one.
	Device string
	// Addr is an IP address of the network interface the device should be bound to
	// (ibverbs: the device rdma_cm would use for it). Empty or unspecified: any.
	Addr string
	// CRC requests MPA CRC32c (soft).
	CRC bool
	// MaxFPDU is the largest FPDU sent (soft; 0: from the TCP MSS).
	MaxFPDU int
	// CQPoll is how long a completion queue is polled after activity before its
	// waiter blocks (ibverbs; 0: the provider's default, negative: never).
	CQPoll time.Duration
	// Logger receives the provider's control-path events (nil: none).
	Logger hclog.Logger
}

// Opener opens a device of one provider.
type Opener func(cfg ProviderConfig) (Device, error)

// ErrProviderNotBuilt is wrapped by OpenProvider's error when the name is a provider
// of this module that the binary was built without (ibverbs needs the build tag
// ibverbs, cgo and the rdma-core headers).
var ErrProviderNotBuilt = errors.New("verbs: RDMA provider not compiled into this binary")

// ErrUnknownProvider is wrapped by OpenProvider's error when no provider has the
// name.
var ErrUnknownProvider = errors.New("verbs: unknown RDMA provider")

// buildHints names the providers of this module that register only in some builds,
// with how to get them.
var buildHints = map[string]string{
	"ibverbs": "rebuild with `go build -tags ibverbs` (needs cgo, libibverbs-dev and librdmacm-dev), or use the soft provider",
}

var (
	providersMu sync.RWMutex
	providers   = map[string]Opener{}
)

// RegisterProvider makes a provider available to OpenProvider under name. Providers
// call it from an init function (verbs/soft as "soft", verbs/ibverbs as "ibverbs");
// programs import the providers they want, or verbs/providers for all of them. It
// panics when name is empty or already registered.
func RegisterProvider(name string, open Opener) {
	if name == "" || open == nil {
		panic("verbs: RegisterProvider needs a name and an Opener")
	}
	providersMu.Lock()
	defer providersMu.Unlock()
	if _, dup := providers[name]; dup {
		panic("verbs: provider " + name + " registered twice")
	}
	providers[name] = open
}

// ProviderNames returns the names of the registered providers, sorted.
func ProviderNames() []string {
	providersMu.RLock()
	defer providersMu.RUnlock()
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// CheckProvider returns nil when a provider is registered under name, and otherwise
// the error OpenProvider would return: it wraps ErrProviderNotBuilt for a provider of
// this module the binary was built without, ErrUnknownProvider for any other name.
func CheckProvider(name string) error {
	providersMu.RLock()
	_, ok := providers[name]
	providersMu.RUnlock()
	if ok {
		return nil
	}
	have := strings.Join(ProviderNames(), ", ")
	if hint, known := buildHints[name]; known {
		return fmt.Errorf("provider %q (this binary has %s): %s: %w", name, have, hint, ErrProviderNotBuilt)
	}
	return fmt.Errorf("provider %q: want one of %s: %w", name, have, ErrUnknownProvider)
}

// OpenProvider opens a device of the provider registered under name. An unknown name
// wraps ErrUnknownProvider, a provider this binary was built without wraps
// ErrProviderNotBuilt; both errors say what is available (see CheckProvider).
func OpenProvider(name string, cfg ProviderConfig) (Device, error) {
	if err := CheckProvider(name); err != nil {
		return nil, err
	}
	providersMu.RLock()
	open := providers[name]
	providersMu.RUnlock()
	dev, err := open(cfg)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", name, err)
	}
	return dev, nil
}

package providers_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	_ "github.com/go-rpcrdma/rpcrdma/verbs/providers"
)

func TestSoftRegistered(t *testing.T) {
	if !slices.Contains(verbs.ProviderNames(), "soft") {
		t.Fatalf("providers: %v, want soft among them", verbs.ProviderNames())
	}
	dev, err := verbs.OpenProvider("soft", verbs.ProviderConfig{CRC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if dev.Name() == "" {
		t.Error("soft device without a name")
	}
}

func TestUnknownAndUnbuiltProviders(t *testing.T) {
	if _, err := verbs.OpenProvider("nosuch", verbs.ProviderConfig{}); !errors.Is(err, verbs.ErrUnknownProvider) {
		t.Errorf("nosuch: %v, want ErrUnknownProvider", err)
	}
	if slices.Contains(verbs.ProviderNames(), "ibverbs") {
		return // built with -tags ibverbs
	}
	if _, err := verbs.OpenProvider("ibverbs", verbs.ProviderConfig{}); !errors.Is(err, verbs.ErrProviderNotBuilt) {
		t.Errorf("ibverbs without the tag: %v, want ErrProviderNotBuilt", err)
	}
}

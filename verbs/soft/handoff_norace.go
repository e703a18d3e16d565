//go:build !race

package soft

// handOff marks application memory handed to the provider: nothing to do
// outside a race build (handoff.go).
func handOff() {}

// takeOver precedes the provider's access to registered memory on the peer's
// behalf: nothing to do outside a race build (handoff.go).
func takeOver() {}

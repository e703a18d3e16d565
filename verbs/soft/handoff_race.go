//go:build race

package soft

import "sync/atomic"

// handoff carries the hand-over edge for the race detector (handoff.go).
var handoff atomic.Uint64

// handOff marks application memory handed to the provider (handoff.go).
func handOff() { handoff.Add(1) }

// takeOver precedes the provider's access to registered memory on the peer's
// behalf (handoff.go).
func takeOver() { handoff.Load() }

//go:build race

package nfs4state

// raceEnabled: allocation counts are not checked under the race detector.
const raceEnabled = true

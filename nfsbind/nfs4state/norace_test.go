//go:build !race

package nfs4state

const raceEnabled = false

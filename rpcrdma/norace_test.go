//go:build !race

package rpcrdma

const raceEnabled = false

//go:build !race

package nfsclient

const raceEnabled = false

//go:build !race

package nfsserver

const raceEnabled = false

//go:build !race

package oncrpc

const raceEnabled = false

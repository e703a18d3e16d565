//go:build !linux

package soft

import "net"

// tcpMSS is not available on this platform; DefaultMaxFPDU is used.
func tcpMSS(net.Conn) int { return 0 }

// mssStep has no MSS to read on this platform.
func (q *queuePair) mssStep(uintptr) { q.mss = 0 }

package oncrpc

// ListenerStats are a listener's connection counters (any transport's: the
// RPC-over-RDMA listener reports the same).
type ListenerStats struct {
	Accepted uint64 // connections accepted
	Closed   uint64 // accepted connections that have closed
	Refused  uint64 // connections refused because the connection limit was reached
	Reaped   uint64 // connections closed for idleness
}

// Open returns the connections accepted and not yet closed, 0 if Closed passes
// Accepted (counters summed or read at different times).
func (s ListenerStats) Open() uint64 {
	if s.Closed >= s.Accepted {
		return 0
	}
	return s.Accepted - s.Closed
}

// Stats returns the listener's connection counters.
func (l *TCPListener) Stats() ListenerStats {
	g := l.guard.Stats()
	return ListenerStats{Accepted: g.Tracked, Closed: g.Left, Refused: g.Refused, Reaped: g.Reaped}
}

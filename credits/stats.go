package credits

// Stats are a snapshot of a Server's shares.
type Stats struct {
	Conns  int // open connections
	Active int // connections in the active set
	// Granted is the sum over the open connections of the grant each was sent last
	// (its rdma_credit); Outstanding the calls Accepted and not yet Done; Unsent the
	// messages whose grants were taken (Conn.Grant) and are not yet Sent or Dropped.
	Granted, Outstanding, Unsent int
}

// Stats returns a snapshot of the Server's shares. It visits every connection (each
// under its own lock, briefly), so it is for monitoring, not for the per-call path,
// which it adds nothing to.
func (s *Server) Stats() Stats {
	st := Stats{Conns: s.Conns(), Active: s.Active()}
	s.mu.Lock()
	conns := make([]*Conn, 0, len(s.list))
	for c := range s.list {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns { // lock order: never a Conn's mu under s.mu
		c.mu.Lock()
		if !c.closed {
			st.Granted += c.lastSent
			st.Outstanding += c.outstanding
			st.Unsent += c.nPending
		}
		c.mu.Unlock()
	}
	return st
}

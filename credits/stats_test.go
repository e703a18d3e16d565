package credits

import "testing"

// Stats sums the grants sent, the calls outstanding and the grants not yet sent over
// the open connections.
func TestServerStats(t *testing.T) {
	s := NewServer(Config{Total: 64, PerConn: 16})
	a, b := s.Open(), s.Open()
	if a.Arrive(16) != Accept || b.Arrive(16) != Accept {
		t.Fatal("first calls refused")
	}
	ga, gb := a.Grant(), b.Grant()
	if st := s.Stats(); st.Unsent != 2 {
		t.Fatalf("stats %+v, want 2 unsent", st)
	}
	a.Sent(ga)
	b.Sent(gb)
	for range 2 {
		if v := a.Arrive(16); v != Accept {
			t.Fatalf("arrive within grant %d: %v", ga, v)
		}
	}
	a.Done()
	st := s.Stats()
	if st.Conns != 2 || st.Outstanding != 3 || st.Granted != int(ga+gb) || st.Granted == 0 || st.Unsent != 0 {
		t.Fatalf("stats %+v, want 2 conns, 3 outstanding, granted %d", st, ga+gb)
	}
	b.Close()
	st = s.Stats()
	if st.Conns != 1 || st.Outstanding != 2 || st.Granted != int(ga) {
		t.Fatalf("after a close: %+v, want 1 conn, 2 outstanding, granted %d", st, ga)
	}
}

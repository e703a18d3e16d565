package oncrpc

import "testing"

// TestListenerStatsOpen: Open is Accepted - Closed, and 0 rather than a wrapped
// ~1.8e19 when Closed passes Accepted (counters read at different times or summed
// over listeners).
func TestListenerStatsOpen(t *testing.T) {
	for _, c := range []struct {
		s    ListenerStats
		want uint64
	}{
		{ListenerStats{}, 0},
		{ListenerStats{Accepted: 5, Closed: 3}, 2},
		{ListenerStats{Accepted: 5, Closed: 5}, 0},
		{ListenerStats{Accepted: 5, Closed: 6}, 0},
	} {
		if got := c.s.Open(); got != c.want {
			t.Errorf("%+v.Open() = %d, want %d", c.s, got, c.want)
		}
	}
}

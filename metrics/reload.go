package metrics

import (
	"sync/atomic"
	"time"
)

// ReloadStats counts a daemon's reloads of its configuration (nfsrdmad's exports
// file, at each SIGHUP), as Prometheus counts its own (prometheus_config_*): how many
// succeeded and failed, whether the last one succeeded, and when the configuration in
// force was last loaded. It is safe for concurrent use; a Collector reads it
// (AddReloads).
type ReloadStats struct {
	succeeded, failed atomic.Uint64
	lastFailed        atomic.Bool
	lastSuccess       atomic.Int64 // Unix nanoseconds
}

// NewReloadStats returns the stats of a configuration first loaded at loaded (the
// daemon's start), which counts as a successful load but not as a reload.
func NewReloadStats(loaded time.Time) *ReloadStats {
	s := &ReloadStats{}
	s.lastSuccess.Store(loaded.UnixNano())
	return s
}

// Succeeded records a reload that succeeded at t.
func (s *ReloadStats) Succeeded(t time.Time) {
	s.lastSuccess.Store(t.UnixNano())
	s.lastFailed.Store(false)
	s.succeeded.Add(1)
}

// Failed records a reload that failed: the configuration in force stays.
func (s *ReloadStats) Failed() {
	s.lastFailed.Store(true)
	s.failed.Add(1)
}

// Reloads returns how many reloads succeeded and failed.
func (s *ReloadStats) Reloads() (succeeded, failed uint64) {
	return s.succeeded.Load(), s.failed.Load()
}

// LastSuccessful reports whether the last reload succeeded (true before any).
func (s *ReloadStats) LastSuccessful() bool { return !s.lastFailed.Load() }

// LastSuccess returns when the configuration in force was loaded.
func (s *ReloadStats) LastSuccess() time.Time { return time.Unix(0, s.lastSuccess.Load()) }

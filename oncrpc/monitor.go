package oncrpc

import (
	"sync"
	"sync/atomic"
)

// A Monitor tells when a server stops answering and when it answers again, like the
// Linux NFS client's "server X not responding, still trying" and "server X OK".
//
// Give it to the Clients that call one server (WithMonitor; several Clients, e.g. NFS
// and MOUNT, may share it) together with a RetryPolicy whose Timeout is the major
// timeout after which a call without a reply counts as the server not responding.
// When a try of any of those Clients times out, the Monitor calls its notify function
// with false, once; the Client retransmits (MaxTries permitting). The next reply any
// of them receives after that calls notify with true, once. Notifications happen in
// order, one at a time, on the goroutine of the call that caused them.
type Monitor struct {
	notify func(responding bool)
	mu     sync.Mutex  // serializes notifications
	quiet  atomic.Bool // the last notification said "not responding"; set under mu
}

// NewMonitor returns a Monitor that reports to notify: false when the server stops
// answering, true when it answers again.
func NewMonitor(notify func(responding bool)) *Monitor {
	return &Monitor{notify: notify}
}

// WithMonitor makes the Client report timeouts and the replies after them to m.
func WithMonitor(m *Monitor) ClientOption {
	return func(c *Client) { c.monitor = m }
}

// NotResponding reports whether the last notification said the server was not
// responding.
func (m *Monitor) NotResponding() bool { return m.quiet.Load() }

// timedOut records a try that got no reply within its timeout.
func (m *Monitor) timedOut() { m.set(true) }

// replied records a reply. It costs one atomic load while the server answers.
func (m *Monitor) replied() {
	if m.quiet.Load() {
		m.set(false)
	}
}

func (m *Monitor) set(silent bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.quiet.Load() == silent {
		return
	}
	m.quiet.Store(silent)
	if m.notify != nil {
		m.notify(!silent)
	}
}

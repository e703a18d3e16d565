package metrics

import "time"

// SetTimeouts sets the timeouts of the endpoint Serve starts with o (the defaults are
// too long for a test to wait for).
func SetTimeouts(o *Options, readHeader, read, write, idle time.Duration) {
	o.timeouts = &timeouts{readHeader: readHeader, read: read, write: write, idle: idle}
}

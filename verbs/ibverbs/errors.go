package ibverbs

import (
	"errors"
	"fmt"
)

// Errors callers may test for with errors.Is.
var (
	// ErrNoDevice: no RDMA device is present, or none matches the
	// Config. The message says how to create one.
	ErrNoDevice = errors.New("ibverbs: no RDMA device")
	// ErrForked: the object was used in a child process forked after the
	// device was opened. RDMA resources do not survive fork; open the
	// device again in the child (after exec).
	ErrForked = errors.New("ibverbs: RDMA resources used in a forked child process")
	// ErrLimit: a device limit (queue pairs, work requests, SGEs,
	// completion queue entries, memory regions) would be exceeded. The
	// wrapping error names the limit and its value.
	ErrLimit = errors.New("ibverbs: device limit exceeded")
)

// PortDownError reports that the device port is not ACTIVE, e.g. because
// the network device under a Soft-RoCE or siw link is down or has no
// carrier.
type PortDownError struct {
	Device string
	Port   int
	// State is the port state name (DOWN, INIT, ARMED, ...).
	State string
}

// Error implements error.
func (e *PortDownError) Error() string {
	return fmt.Sprintf("ibverbs: %s port %d is %s, not ACTIVE (is the network device up? `ip link set DEV up`, `rdma link show`)", e.Device, e.Port, e.State)
}

// MemlockError reports that memory registration failed because the process
// may not lock (pin) that much memory: RLIMIT_MEMLOCK.
type MemlockError struct {
	// Length is the size of the failed registration in bytes.
	Length int
	// Limit is the RLIMIT_MEMLOCK soft limit in bytes.
	Limit uint64
	// Err is the errno the registration failed with.
	Err error
}

// Error implements error.
func (e *MemlockError) Error() string {
	return fmt.Sprintf("ibverbs: registering %d bytes: %v: RLIMIT_MEMLOCK is %d bytes; raise it with `ulimit -l unlimited` "+
		"(or a size in KiB) in the shell, LimitMEMLOCK=infinity in the systemd unit, "+
		"`* - memlock unlimited` in /etc/security/limits.conf, or --ulimit memlock=-1 for a container", e.Length, e.Err, e.Limit)
}

// Unwrap returns the errno.
func (e *MemlockError) Unwrap() error { return e.Err }

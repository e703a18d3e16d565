package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Notify tells the service manager that started the process about its state, by the
// sd_notify(3) protocol: state is newline-separated VAR=value assignments such as
// "READY=1", "RELOADING=1", "STOPPING=1" or "STATUS=...", sent as one datagram to
// the AF_UNIX socket $NOTIFY_SOCKET names (abstract when it begins with '@'). Without
// $NOTIFY_SOCKET (not started as a systemd Type=notify service) it does nothing and
// returns nil. The protocol is this one datagram, so the module carries it rather
// than depend on go-systemd.
func Notify(state string) error {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil
	}
	if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "@") {
		return fmt.Errorf("sd_notify: NOTIFY_SOCKET %q: %w", name, errors.ErrUnsupported) // vsock: and others
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", name, err)
	}
	return nil
}

// NotifyOrLog is Notify for a daemon, which logs a failure to log rather than stop:
// systemd then times the start-up out, and the log says why.
func NotifyOrLog(log hclog.Logger, state string) {
	if err := Notify(state); err != nil {
		log.Warn("cannot notify systemd", "error", err)
	}
}

package cli

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// CheckAddr checks an address flag's value as a command line is parsed: host:port,
// with a port from 0 to 65535 by number. flagName (such as "-tcp") names the flag in
// the error, so that a typo is a usage error rather than a listen or dial that fails
// later.
func CheckAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want host:port (e.g. 127.0.0.1:2049 or :2049): %w", flagName, addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%s %q: port %q is not a number from 0 to 65535", flagName, addr, port)
	}
	return nil
}

// CheckRPCBindAddr checks an rpcbind address flag's value: host:port (TCP), or
// unix:PATH for rpcbind's AF_LOCAL socket, as rpcbind.Dial takes it.
func CheckRPCBindAddr(flagName, addr string) error {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return fmt.Errorf("%s %q: want host:port or unix:PATH, with the socket's path", flagName, addr)
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s %q: want host:port or unix:PATH (e.g. 127.0.0.1:111 or unix:/run/rpcbind.sock): %w", flagName, addr, err)
	}
	return CheckAddr(flagName, addr)
}

package cli

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// TestNotifyAbstractSocket: a NOTIFY_SOCKET beginning with '@' names a socket in
// Linux's abstract namespace (as systemd sets it for some services), and the whole
// state goes in one datagram, however long its STATUS.
func TestNotifyAbstractSocket(t *testing.T) {
	name := fmt.Sprintf("@rpcrdma-cli-notify-test-%d", os.Getpid())
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", name)
	state := "READY=1\nSTATUS=" + strings.Repeat("x", 4000)
	if err := Notify(state); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8192)
	n, err := ln.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(buf[:n]); got != state {
		t.Errorf("datagram of %d bytes, want the %d-byte state", n, len(state))
	}
}

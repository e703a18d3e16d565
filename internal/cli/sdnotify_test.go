//go:build unix

package cli

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
)

func TestNotify(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := Notify("READY=1"); err != nil {
		t.Fatalf("without NOTIFY_SOCKET: %v", err)
	}

	path := filepath.Join(t.TempDir(), "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	if err := Notify("READY=1\nSTATUS=serving"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, err := ln.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(buf[:n]); got != "READY=1\nSTATUS=serving" {
		t.Errorf("datagram %q", got)
	}

	t.Setenv("NOTIFY_SOCKET", "vsock:2:1234")
	if err := Notify("READY=1"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("vsock address: %v, want ErrUnsupported", err)
	}
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent"))
	if err := Notify("READY=1"); err == nil {
		t.Error("no socket there, and no error")
	}
}

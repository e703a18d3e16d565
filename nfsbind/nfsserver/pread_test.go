//go:build linux

package nfsserver

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPreadFull: preadFull fills the buffer from the offset, stops at the end of the
// file, reads nothing where the buffer's end would lie beyond the largest offset, and
// reports a failing read.
func TestPreadFull(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	for _, tc := range []struct {
		name string
		off  uint64
		size int
		want []byte
	}{
		{"whole", 0, len(data), data},
		{"middle", 4321, 100, data[4321:4421]},
		{"past the end", 9990, 100, data[9990:]},
		{"at the end", uint64(len(data)), 100, nil},
		{"offset overflows", math.MaxInt64 - 10, 100, nil},
	} {
		buf := make([]byte, tc.size)
		n, err := preadFull(fd, buf, tc.off)
		if err != nil || !bytes.Equal(buf[:n], tc.want) {
			t.Errorf("%s: preadFull = %d bytes, %v; want %d bytes", tc.name, n, err, len(tc.want))
		}
	}
	if _, err := preadFull(-1, make([]byte, 10), 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("preadFull of a bad descriptor: err %v, want EBADF", err)
	}
}

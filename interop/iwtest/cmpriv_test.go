package iwtest

import (
	"bytes"
	"errors"
	"testing"
)

func TestConnectPrivateLinux(t *testing.T) {
	// Linux xprtrdma's block from the lab capture: v1, Send With Invalidate
	// OK, 4 KiB each way; svcrdma answers with flags 0.
	req := readFile(t, "testdata/xprtrdma-siw-client-to-host.bin")[24:32]
	c, err := ParseConnectPrivate(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ConnectPrivate{Version: 1, Flags: FlagSendWithInvalidateOK, SendSize: 4096, RecvSize: 4096}); c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	rep := readFile(t, "testdata/knfsd-crc-mpa-reply.bin")[24:32]
	got := AppendConnectPrivate(nil, ConnectPrivate{Version: 1, SendSize: 4096, RecvSize: 4096})
	if !bytes.Equal(got, rep) {
		t.Fatalf("AppendConnectPrivate = % x, want knfsd's % x", got, rep)
	}
}

func TestConnectPrivateErrors(t *testing.T) {
	for _, tc := range []struct {
		pd    []byte
		field string
	}{
		{[]byte{0xf6, 0xab, 0x0e}, "cm_private.length"},
		{[]byte{0xf6, 0xab, 0x0e, 0x19, 1, 0, 3, 3}, "cm_private.magic"},
		{[]byte{0xf6, 0xab, 0x0e, 0x18, 2, 0, 3, 3}, "cm_private.version"},
	} {
		_, err := ParseConnectPrivate(tc.pd)
		var he *HeaderError
		if !errors.As(err, &he) || he.Field != tc.field {
			t.Errorf("% x: err %v, want a *HeaderError for %s", tc.pd, err, tc.field)
		}
	}
}

func TestAppendConnectPrivateClamps(t *testing.T) {
	got := AppendConnectPrivate(nil, ConnectPrivate{Version: 1, SendSize: 100, RecvSize: 1 << 30})
	if got[6] != 0 || got[7] != 255 {
		t.Fatalf("sizes encoded as %d, %d; want 0 (1 KiB) and 255 (256 KiB)", got[6], got[7])
	}
}

func FuzzParseConnectPrivate(f *testing.F) {
	f.Fuzz(func(t *testing.T, pd []byte) {
		c, err := ParseConnectPrivate(pd)
		if err != nil {
			var he *HeaderError
			if !errors.As(err, &he) {
				t.Fatalf("error %v is not a *HeaderError", err)
			}
			return
		}
		if got := AppendConnectPrivate(nil, c); !bytes.Equal(got, pd[:ConnectPrivateLen]) {
			t.Fatalf("re-encoded % x, want % x", got, pd[:ConnectPrivateLen])
		}
	})
}

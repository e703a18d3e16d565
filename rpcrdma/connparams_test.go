package rpcrdma

import (
	"bytes"
	"errors"
	"testing"
)

func TestConnPrivateGolden(t *testing.T) {
	// Linux xprtrdma's private data with the default 4096-byte sizes (notes §0.3).
	linux := []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}
	var p ConnPrivate
	if err := p.Decode(linux); err != nil {
		t.Fatal(err)
	}
	want := ConnPrivate{SendInvOK: true, SendSize: 4096, RecvSize: 4096}
	if p != want {
		t.Fatalf("decoded %+v, want %+v", p, want)
	}
	if got := want.Append(nil); !bytes.Equal(got, linux) {
		t.Fatalf("encoded % x, want % x", got, linux)
	}
	// svcrdma: flags 0.
	svc := ConnPrivate{SendSize: 4096, RecvSize: 4096}.Append(nil)
	if !bytes.Equal(svc, []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3}) {
		t.Fatalf("server private data % x", svc)
	}
}

func TestConnPrivateSizes(t *testing.T) {
	for _, c := range []struct{ in, out int }{
		{0, 1024}, {1024, 1024}, {1500, 1024}, {2048, 2048}, {65536, 65536},
		{256 << 10, 256 << 10}, {1 << 20, 256 << 10},
	} {
		var p ConnPrivate
		if err := p.Decode(ConnPrivate{SendSize: c.in, RecvSize: c.in}.Append(nil)); err != nil {
			t.Fatal(err)
		}
		if p.SendSize != c.out || p.RecvSize != c.out {
			t.Errorf("size %d round-tripped to %d/%d, want %d", c.in, p.SendSize, p.RecvSize, c.out)
		}
	}
}

func TestConnPrivateErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrPrivateShort},
		{"short", []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 3}, ErrPrivateShort},
		{"truncated", []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 3}, ErrPrivateTruncated},
		{"magic-only", []byte{0xf6, 0xab, 0x0e, 0x18}, ErrPrivateTruncated},
		{"magic", []byte{0xf6, 0xab, 0x0e, 0x19, 1, 0, 3, 3}, ErrPrivateMagic},
		{"version", []byte{0xf6, 0xab, 0x0e, 0x18, 2, 0, 3, 3}, ErrPrivateVersion},
	} {
		p, err := PeerPrivate(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if p != DefaultPrivate {
			t.Errorf("%s: fallback %+v", c.name, p)
		}
	}
	// Trailing bytes and unknown flags are tolerated.
	p, err := PeerPrivate([]byte{0xf6, 0xab, 0x0e, 0x18, 1, 0x81, 0, 255, 9, 9})
	if err != nil {
		t.Fatal(err)
	}
	if !p.SendInvOK || p.Flags != 0x80 || p.SendSize != 1024 || p.RecvSize != 256<<10 {
		t.Fatalf("decoded %+v", p)
	}
}

func FuzzConnPrivate(f *testing.F) {
	f.Add([]byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p ConnPrivate
		err := p.Decode(b)
		magic := len(b) >= 4 && b[0] == 0xf6 && b[1] == 0xab && b[2] == 0x0e && b[3] == 0x18
		if truncated := magic && len(b) < PrivateSize; errors.Is(err, ErrPrivateTruncated) != truncated {
			t.Fatalf("% x: %v; truncated RFC 8797 data: %v", b, err, truncated)
		}
		if err != nil {
			return
		}
		if p.SendSize < MinInlineSize || p.SendSize > MaxInlineSize || p.RecvSize%1024 != 0 {
			t.Fatalf("decoded sizes out of range: %+v", p)
		}
		enc := p.Append(nil)
		if !bytes.Equal(enc[:5], b[:5]) || enc[6] != b[6] || enc[7] != b[7] || enc[5] != b[5]&FlagSendInvOK {
			t.Fatalf("re-encoded % x from % x", enc, b[:8])
		}
	})
}

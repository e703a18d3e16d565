package rpcbind

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// FuzzParseUniversalAddr: parsing never panics, fails only with a *UniversalAddrError,
// and what it accepts formats to a universal address that parses to the same address
// and port (the canonical form is a fixed point).
// Seeds (testdata/fuzz/FuzzParseUniversalAddr): one per rule of ParseUniversalAddr.
func FuzzParseUniversalAddr(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		ap, err := ParseUniversalAddr(s)
		if err != nil {
			var ue *UniversalAddrError
			if !errors.As(err, &ue) || !errors.Is(err, ErrBadUniversalAddr) {
				t.Fatalf("error %v is not a *UniversalAddrError", err)
			}
			switch ue.Part {
			case "host", "p1", "p2", "format":
			default:
				t.Fatalf("error names part %q", ue.Part)
			}
			return
		}
		if ap.Addr().Zone() != "" {
			t.Fatalf("accepted a zone: %v", ap)
		}
		canon := FormatUniversalAddr(ap)
		back, err := ParseUniversalAddr(canon)
		if err != nil || back != ap {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, ap, canon, back, err)
		}
		if FormatUniversalAddr(back) != canon {
			t.Fatalf("canonical form %q is not stable", canon)
		}
	})
}

// FuzzDecodeDump: decoding an RPCBPROC_DUMP result never panics, fails only with a
// *FieldError, never returns more than MaxDumpEntries entries or strings over the
// limits, and what it accepts re-encodes to as many bytes that decode to the same
// list (the bytes themselves may differ only in XDR pad, which the decoder, like
// libtirpc, does not require to be zero).
// Seeds (testdata/fuzz/FuzzDecodeDump): one per rule of RPCBList.DecodeXDR.
func FuzzDecodeDump(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := DecodeDump(b)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Type != "rpcblist" || fe.Field == "" {
				t.Fatalf("error %v is not a *FieldError naming an rpcblist field", err)
			}
			return
		}
		if len(l) > MaxDumpEntries {
			t.Fatalf("%d entries", len(l))
		}
		for _, m := range l {
			if m.Validate() != nil {
				t.Fatalf("entry over the limits: %+v", m)
			}
		}
		var e xdr.Encoder
		l.EncodeXDR(&e)
		if len(e.Bytes()) != len(b) {
			t.Fatalf("re-encoding has %d bytes, input %d", len(e.Bytes()), len(b))
		}
		again, err := DecodeDump(e.Bytes())
		if err != nil || len(again) != len(l) {
			t.Fatalf("re-encoding decodes to %d entries, %v", len(again), err)
		}
		for i := range l {
			if again[i] != l[i] {
				t.Fatalf("entry %d: %+v became %+v", i, l[i], again[i])
			}
		}
	})
}

// FuzzDecodePmapDump: as FuzzDecodeDump for the version 2 PMAPPROC_DUMP result.
// Seeds (testdata/fuzz/FuzzDecodePmapDump): one per rule of PmapList.DecodeXDR.
func FuzzDecodePmapDump(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := DecodePmapDump(b)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Type != "pmaplist" || fe.Field == "" {
				t.Fatalf("error %v is not a *FieldError naming a pmaplist field", err)
			}
			return
		}
		var e xdr.Encoder
		l.EncodeXDR(&e)
		if !bytes.Equal(e.Bytes(), b) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", e.Bytes(), b)
		}
	})
}

// FuzzDecodeRPCB: decoding one rpcb (the argument of SET, UNSET and GETADDR) never
// panics, fails only with a *FieldError naming an rpcb field, enforces the string
// limits, and what it accepts re-encodes to as many bytes that decode the same.
// Seeds (testdata/fuzz/FuzzDecodeRPCB): one per rule of RPCB.DecodeXDR.
func FuzzDecodeRPCB(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var m RPCB
		d := xdr.NewDecoder(b)
		if err := m.DecodeXDR(d); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Type != "rpcb" || fe.Entry != -1 {
				t.Fatalf("error %v is not a *FieldError naming an rpcb field", err)
			}
			switch fe.Field {
			case "r_prog", "r_vers", "r_netid", "r_addr", "r_owner":
			default:
				t.Fatalf("error names field %q", fe.Field)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an rpcb over the limits: %v", err)
		}
		var e xdr.Encoder
		m.EncodeXDR(&e)
		if e.Len() != d.Offset() {
			t.Fatalf("re-encoding has %d bytes, decoded %d", e.Len(), d.Offset())
		}
		var again RPCB
		if err := again.DecodeXDR(xdr.NewDecoder(e.Bytes())); err != nil || again != m {
			t.Fatalf("%+v re-encodes to %+v, %v", m, again, err)
		}
	})
}

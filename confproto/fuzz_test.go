package confproto

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzConfigRDMAReq: decoding never panics, fails only with ErrTruncated on inputs under
// 12 bytes, and what it accepts re-encodes to the first 12 bytes.
func FuzzConfigRDMAReq(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ConfigRDMAReq
		n, err := r.DecodeXDR(b)
		if len(b) < ReqSize {
			if !errors.Is(err, ErrTruncated) || n != 0 {
				t.Fatalf("short input: n %d err %v", n, err)
			}
			return
		}
		if err != nil || n != ReqSize || !bytes.Equal(r.AppendXDR(nil), b[:n]) {
			t.Fatalf("n %d err %v", n, err)
		}
	})
}

// FuzzConfigRDMAReply: as FuzzConfigRDMAReq for the reply.
func FuzzConfigRDMAReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ConfigRDMAReply
		n, err := r.DecodeXDR(b)
		if len(b) < ReplySize {
			if !errors.Is(err, ErrTruncated) || n != 0 {
				t.Fatalf("short input: n %d err %v", n, err)
			}
			return
		}
		if err != nil || n != ReplySize || !bytes.Equal(r.AppendXDR(nil), b[:n]) {
			t.Fatalf("n %d err %v", n, err)
		}
	})
}

package iwtest

import (
	"errors"
	"testing"
)

func FuzzParseCall(f *testing.F) {
	f.Add(AppendNullCall(nil, 1, 128, ProgNFS, 4))
	f.Fuzz(func(t *testing.T, msg []byte) {
		cc, cerr := ParseCallChunks(msg)
		if cerr != nil {
			var he *HeaderError
			if !errors.As(cerr, &he) || he.Field == "" {
				t.Fatalf("ParseCallChunks error %v is not a *HeaderError naming a field", cerr)
			}
		}
		c, err := ParseCall(msg)
		if err == nil && (cerr != nil || cc != c) {
			t.Fatalf("ParseCall = %+v but ParseCallChunks = %+v, %v", c, cc, cerr)
		}
		if err != nil {
			var he *HeaderError
			if !errors.As(err, &he) || he.Field == "" {
				t.Fatalf("error %v is not a *HeaderError naming a field", err)
			}
			return
		}
		if c.ArgLen < 0 || c.ArgLen > len(msg)-17*4 {
			t.Fatalf("ArgLen %d out of range for %d bytes", c.ArgLen, len(msg))
		}
		if c.Flavor == 0 && c.Proc == 0 && len(msg) == 17*4 && string(msg[15*4:16*4]) == "\x00\x00\x00\x00" {
			// a minimal AUTH_NONE NULL call re-encodes to the same bytes
			if got := AppendNullCall(nil, c.XID, c.Credits, c.Prog, c.Vers); string(got) != string(msg) {
				t.Fatalf("re-encoded % x, want % x", got, msg)
			}
		}
	})
}

func FuzzParseReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := ParseReply(msg)
		if err != nil {
			var he *HeaderError
			if !errors.As(err, &he) || he.Field == "" {
				t.Fatalf("error %v is not a *HeaderError naming a field", err)
			}
			return
		}
		if r.ResLen < 0 || r.ResLen > len(msg)-10*4 {
			t.Fatalf("ResLen %d out of range for %d bytes", r.ResLen, len(msg))
		}
		if r.ReplyStat > 1 {
			t.Fatalf("ReplyStat %d accepted", r.ReplyStat)
		}
	})
}

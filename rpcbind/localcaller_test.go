//go:build linux

package rpcbind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// answerFrom makes the same SET and UNSET calls, through versions 2 and 4, from a TCP
// connection bound to src, to the rpcbind at addr, and returns what each answered.
func answerFrom(t *testing.T, addr, src string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, src, err)
	}
	tr := oncrpc.NewTCPTransport(conn, nil)
	defer tr.Close()
	c := newTestClient(t, tr, Version4)
	show := func(ok bool, err error) string {
		var re *oncrpc.RejectError
		if errors.As(err, &re) {
			return re.Error()
		}
		return fmt.Sprint(ok, err)
	}
	q := RPCB{Prog: confRDMAProg, Vers: 20, NetID: NetIDTCP, Addr: "127.0.0.1.78.90", Owner: "x"}
	m := Mapping{Prog: confRDMAProg, Vers: 21, Prot: IPProtoTCP, Port: 20059}
	var out []string
	ok, err := c.Set(ctx, &q)
	out = append(out, "v4 SET "+show(ok, err))
	ok, err = c.PmapSet(ctx, &m)
	out = append(out, "v2 SET "+show(ok, err))
	ok, err = c.Unset(ctx, &RPCB{Prog: q.Prog, Vers: q.Vers, NetID: q.NetID})
	out = append(out, "v4 UNSET "+show(ok, err))
	ok, err = c.PmapUnset(ctx, &m)
	out = append(out, "v2 UNSET "+show(ok, err))
	return out
}

// TestRegistryLocalCallerMatchesRealRPCBind: SET and UNSET are honoured only from
// 127.0.0.1 (and ::1), as Linux rpcbind's is_loopback has it, not from the rest of
// 127.0.0.0/8; any other caller's call is denied with AUTH_TOOWEAK, as rpcbind's
// check_access answers (svcerr_weakauth), not answered FALSE. Both are asked the
// same calls from each address.
func TestRegistryLocalCallerMatchesRealRPCBind(t *testing.T) {
	needRPCBind(t)
	reg := NewRegistry()
	ours := listenRegistry(t, reg)
	for _, src := range []string{"127.0.0.1", "127.0.0.2", "127.255.255.254"} {
		real := answerFrom(t, "127.0.0.1:111", src)
		got := answerFrom(t, ours, src)
		if fmt.Sprint(real) != fmt.Sprint(got) {
			t.Errorf("from %s: rpcbind answered %q, the Registry %q", src, real, got)
		}
		if src != "127.0.0.1" {
			if l := reg.List(); len(l) != 6 {
				t.Errorf("from %s: the Registry's table has %d registrations, want only its own 6: %+v", src, len(l), l)
			}
		}
	}
}

// TestRegistryLocalCallers: which caller addresses may SET and UNSET, through every
// version, and how the others are denied.
func TestRegistryLocalCallers(t *testing.T) {
	reg := NewRegistry()
	tests := []struct {
		from net.Addr
		ok   bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 700}, true},
		{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 700}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 700}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 700}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 700}, false},
		{&net.UDPAddr{IP: net.IPv4(127, 1, 2, 3), Port: 700}, false},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.2"), Port: 700}, false},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 700}, false},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 700}, false},
		{nil, false},
	}
	for _, tc := range tests {
		for _, vers := range []uint32{Version2, Version3, Version4} {
			h := reg.pmapHandler()
			var set, unset []byte
			if vers == Version2 {
				m := Mapping{Prog: 7, Vers: 1, Prot: IPProtoTCP, Port: 7}
				set, unset = enc(&m), enc(&m)
			} else {
				h = reg.rpcbHandler(vers)
				q := RPCB{Prog: 7, Vers: 1, NetID: NetIDTCP, Addr: "127.0.0.1.0.7", Owner: "x"}
				set, unset = enc(&q), enc(&q)
			}
			for _, c := range []struct {
				proc uint32
				args []byte
			}{{ProcSet, set}, {ProcUnset, unset}} {
				req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: c.proc}, Args: xdr.NewDecoder(c.args), RemoteAddr: tc.from}
				var e xdr.Encoder
				err := h.ServeRPC(context.Background(), req, &e)
				var re *oncrpc.RejectError
				switch {
				case tc.ok && err != nil:
					t.Errorf("v%d proc %d from %v: %v, want an answer", vers, c.proc, tc.from, err)
				case !tc.ok && (!errors.As(err, &re) || re.Stat != oncrpc.AuthError || re.AuthStat != oncrpc.AuthTooWeak):
					t.Errorf("v%d proc %d from %v: %v, want AUTH_TOOWEAK", vers, c.proc, tc.from, err)
				}
			}
			if _, ok := reg.Lookup(7, 1, NetIDTCP); ok {
				t.Fatalf("v%d from %v: SET and UNSET left a registration", vers, tc.from)
			}
		}
	}
}

package portmap

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func enc(m xdr.EncoderTo) []byte {
	var e xdr.Encoder
	m.EncodeXDR(&e)
	return e.Bytes()
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// Golden vectors derived from RFC 1833's XDR.
func TestGolden(t *testing.T) {
	// mapping: prog 100003 (0x186a3), vers 3, prot TCP 6, port 2049 (0x801).
	if got, want := enc(&Mapping{Prog: 100003, Vers: 3, Prot: ProtoTCP, Port: 2049}), unhex("000186a3 00000003 00000006 00000801"); !bytes.Equal(got, want) {
		t.Errorf("mapping: %x", got)
	}
	// rpcb: prog 100005, vers 3, netid "tcp" (3 + 1 pad), addr "0.0.0.0.8.1" (11 + 1 pad), owner "" .
	r := Rpcb{Prog: 100005, Vers: 3, Netid: "tcp", Addr: "0.0.0.0.8.1"}
	want := unhex("000186a5 00000003 00000003 74637000 0000000b 302e302e302e302e382e3100 00000000")
	if got := enc(&r); !bytes.Equal(got, want) {
		t.Errorf("rpcb: %x", got)
	}
	var back Rpcb
	if err := back.DecodeXDR(xdr.NewDecoder(want)); err != nil || back != r {
		t.Errorf("rpcb decode: %+v %v", back, err)
	}
	// pmaplist with one entry: TRUE, mapping, FALSE.
	l := PmapList{{Prog: 100000, Vers: 2, Prot: ProtoTCP, Port: 111}}
	if got := enc(&l); !bytes.Equal(got, unhex("00000001 000186a0 00000002 00000006 0000006f 00000000")) {
		t.Errorf("pmaplist: %x", got)
	}
}

func TestUniversalAddr(t *testing.T) {
	for _, c := range []struct {
		ip   net.IP
		port int
		want string
	}{
		{net.IPv4(127, 0, 0, 1), 2049, "127.0.0.1.8.1"},
		{nil, 111, "0.0.0.0.0.111"},
		{net.ParseIP("::1"), 20049, "::1.78.81"},
	} {
		got := UniversalAddr(c.ip, c.port)
		if got != c.want {
			t.Errorf("UniversalAddr(%v, %d) = %q, want %q", c.ip, c.port, got, c.want)
		}
		host, port, err := ParseUniversalAddr(got)
		if err != nil || port != c.port || !strings.HasPrefix(c.want, host) {
			t.Errorf("ParseUniversalAddr(%q) = %q %d %v", got, host, port, err)
		}
	}
	for _, bad := range []string{"", "1", "1.2", "a.b.c", "1.2.3.4.256.1", "1.2.3.4.x.1"} {
		if _, _, err := ParseUniversalAddr(bad); err == nil {
			t.Errorf("ParseUniversalAddr(%q) accepted", bad)
		}
	}
}

func TestRegistryOverTCP(t *testing.T) {
	reg := NewRegistry()
	reg.SetPort(100003, 3, ProtoTCP, 2049)
	reg.SetPort(100005, 3, ProtoTCP, 2049)
	rs := oncrpc.NewServer(nil)
	reg.Register(rs)
	l, err := oncrpc.ListenTCP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	go rs.Serve(l)
	defer rs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := oncrpc.DialTCP(ctx, l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if p, err := GetPort(ctx, tr, 100003, 3, ProtoTCP); err != nil || p != 2049 {
		t.Fatalf("GETPORT nfs: %d %v", p, err)
	}
	if p, err := GetPort(ctx, tr, 100003, 3, ProtoUDP); err != nil || p != 0 {
		t.Fatalf("GETPORT nfs/udp: %d %v", p, err)
	}
	for _, v := range []uint32{VersionV3, VersionV4} {
		a, err := GetAddr(ctx, tr, v, 100005, 3, "tcp")
		if err != nil || a != "0.0.0.0.8.1" {
			t.Fatalf("GETADDR v%d: %q %v", v, a, err)
		}
		if a, _ := GetAddr(ctx, tr, v, 100021, 4, "tcp"); a != "" {
			t.Fatalf("GETADDR of an unregistered program: %q", a)
		}
	}
	// Registration from loopback works once; a second SET of the same mapping fails.
	m := Mapping{Prog: 400000, Vers: 1, Prot: ProtoTCP, Port: 4000}
	if ok, err := Set(ctx, tr, m); err != nil || !ok {
		t.Fatalf("SET: %v %v", ok, err)
	}
	if ok, _ := Set(ctx, tr, m); ok {
		t.Fatal("SET of an existing mapping succeeded")
	}
	if p, _ := GetPort(ctx, tr, 400000, 1, ProtoTCP); p != 4000 {
		t.Fatalf("GETPORT after SET: %d", p)
	}
	ms, err := Dump(ctx, tr)
	if err != nil || len(ms) != 9 { // 6 for the port mapper itself, nfs, mount, 400000
		t.Fatalf("DUMP: %d entries %v: %+v", len(ms), err, ms)
	}
	if ok, err := Unset(ctx, tr, m); err != nil || !ok {
		t.Fatalf("UNSET: %v %v", ok, err)
	}
	if p, _ := GetPort(ctx, tr, 400000, 1, ProtoTCP); p != 0 {
		t.Fatalf("GETPORT after UNSET: %d", p)
	}
	// Garbage arguments are GARBAGE_ARGS.
	err = oncrpc.NewClient(tr, Program, VersionV2).Call(ctx, PmapGetport, rawArgs{0, 0, 0, 1}, nil)
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.GarbageArgs {
		t.Fatalf("short GETPORT args: %v", err)
	}
}

type rawArgs []byte

func (r rawArgs) EncodeXDR(e *xdr.Encoder) { e.FixedOpaque(r) }

// Only local callers may change the registry.
func TestSetRefusedFromRemote(t *testing.T) {
	reg := NewRegistry()
	h := reg.pmapHandler()
	m := Mapping{Prog: 7, Vers: 1, Prot: ProtoTCP, Port: 7}
	for _, c := range []struct {
		addr net.Addr
		want bool
	}{{&net.TCPAddr{IP: net.IPv4(10, 0, 2, 15), Port: 700}, false}, {&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 700}, true}} {
		req := &oncrpc.Request{Header: oncrpc.CallHeader{Proc: PmapSet}, Args: xdr.NewDecoder(enc(&m)), RemoteAddr: c.addr}
		var e xdr.Encoder
		if err := h.ServeRPC(context.Background(), req, &e); err != nil {
			t.Fatal(err)
		}
		if got := e.Bytes()[3] == 1; got != c.want {
			t.Errorf("SET from %v: %v, want %v", c.addr, got, c.want)
		}
	}
}

func seeds() map[string][]byte {
	return map[string][]byte{
		"mapping":           append([]byte{0}, enc(&Mapping{Prog: 100003, Vers: 3, Prot: 6, Port: 2049})...),
		"mapping-short":     {0, 0, 0, 0, 1},
		"rpcb":              append([]byte{1}, enc(&Rpcb{Prog: 100005, Vers: 3, Netid: "tcp", Addr: "0.0.0.0.8.1", Owner: "x"})...),
		"rpcb-netid-long":   append([]byte{1}, enc(&Rpcb{Netid: strings.Repeat("n", 256)})...),
		"rpcb-truncated":    append([]byte{1}, enc(&Rpcb{Netid: "tcp"})[:10]...),
		"pmaplist":          append([]byte{2}, enc(&PmapList{{Prog: 1}, {Prog: 2}})...),
		"pmaplist-bad-bool": {2, 0, 0, 0, 2},
		"rpcblist":          append([]byte{3}, enc(&RpcbList{{Prog: 1, Netid: "udp"}})...),
		"rpcblist-short":    {3, 0, 0, 0, 1, 0, 0},
	}
}

// FuzzDecode decodes every type of this package from arbitrary input (first byte picks
// the type): no panic, and what decodes re-encodes to exactly the bytes consumed.
func FuzzDecode(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		var m interface {
			xdr.EncoderTo
			xdr.DecoderFrom
		}
		switch data[0] % 4 {
		case 0:
			m = &Mapping{}
		case 1:
			m = &Rpcb{}
		case 2:
			m = &PmapList{}
		case 3:
			m = &RpcbList{}
		}
		d := xdr.NewDecoder(data[1:])
		if err := m.DecodeXDR(d); err != nil {
			return
		}
		if got := enc(m); len(got) != d.Offset() {
			t.Fatalf("%T: consumed %d, re-encoded %d", m, d.Offset(), len(got))
		}
	})
}

func TestWriteCorpus(t *testing.T) {
	if os.Getenv("PORTMAP_WRITE_CORPUS") != "1" {
		t.Skip("set PORTMAP_WRITE_CORPUS=1 to regenerate testdata/fuzz/FuzzDecode")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

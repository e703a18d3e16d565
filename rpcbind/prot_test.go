package rpcbind

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// goldenRPCB is the SET argument registering CONF_RDMA on rdma at 192.0.2.1:20049.
var (
	goldenRPCB = RPCB{Prog: 100400, Vers: 1, NetID: "rdma", Addr: "192.0.2.1.78.81", Owner: "superuser"}
	// Derivation (RFC 1833 §2.1 struct rpcb, RFC 4506 strings: length word, bytes, pad to 4):
	goldenRPCBWire = []byte{
		0x00, 0x01, 0x88, 0x30, // r_prog 100400 = 0x18830
		0x00, 0x00, 0x00, 0x01, // r_vers 1
		0x00, 0x00, 0x00, 0x04, 'r', 'd', 'm', 'a', // r_netid "rdma", no pad
		0x00, 0x00, 0x00, 0x0f, '1', '9', '2', '.', '0', '.', '2', '.', '1', '.', '7', '8', '.', '8', '1', 0, // r_addr, 15 bytes + 1 pad
		0x00, 0x00, 0x00, 0x09, 's', 'u', 'p', 'e', 'r', 'u', 's', 'e', 'r', 0, 0, 0, // r_owner, 9 bytes + 3 pad
	}
	// A DUMP result with two entries: rpcbind itself on tcp and CONF_RDMA on rdma6.
	goldenDumpWire = []byte{
		0, 0, 0, 1, // rpcblist_ptr: an entry follows
		0x00, 0x01, 0x86, 0xa0, // r_prog 100000
		0, 0, 0, 4, // r_vers 4
		0, 0, 0, 3, 't', 'c', 'p', 0, // r_netid "tcp" + 1 pad
		0, 0, 0, 13, '0', '.', '0', '.', '0', '.', '0', '.', '0', '.', '1', '1', '1', 0, 0, 0, // r_addr "0.0.0.0.0.111" + 3 pad
		0, 0, 0, 9, 's', 'u', 'p', 'e', 'r', 'u', 's', 'e', 'r', 0, 0, 0, // r_owner
		0, 0, 0, 1, // rpcb_next: an entry follows
		0x00, 0x01, 0x88, 0x30, // r_prog 100400
		0, 0, 0, 1, // r_vers 1
		0, 0, 0, 5, 'r', 'd', 'm', 'a', '6', 0, 0, 0, // r_netid "rdma6" + 3 pad
		0, 0, 0, 9, ':', ':', '1', '.', '7', '8', '.', '8', '1', 0, 0, 0, // r_addr "::1.78.81"
		0, 0, 0, 7, 'u', 'n', 'k', 'n', 'o', 'w', 'n', 0, // r_owner "unknown" + 1 pad
		0, 0, 0, 0, // rpcb_next: end
	}
)

var goldenDump = RPCBList{
	{Prog: 100000, Vers: 4, NetID: "tcp", Addr: "0.0.0.0.0.111", Owner: "superuser"},
	{Prog: 100400, Vers: 1, NetID: "rdma6", Addr: "::1.78.81", Owner: "unknown"},
}

func TestRPCBGolden(t *testing.T) {
	var e xdr.Encoder
	goldenRPCB.EncodeXDR(&e)
	if !bytes.Equal(e.Bytes(), goldenRPCBWire) {
		t.Fatalf("encode:\n got %x\nwant %x", e.Bytes(), goldenRPCBWire)
	}
	var m RPCB
	if err := m.DecodeXDR(xdr.NewDecoder(goldenRPCBWire)); err != nil || m != goldenRPCB {
		t.Fatalf("decode = %+v, %v", m, err)
	}
}

func TestDumpGolden(t *testing.T) {
	l, err := DecodeDump(goldenDumpWire)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != len(goldenDump) {
		t.Fatalf("decoded %d entries: %+v", len(l), l)
	}
	for i := range l {
		if l[i] != goldenDump[i] {
			t.Errorf("entry %d = %+v, want %+v", i, l[i], goldenDump[i])
		}
	}
	var e xdr.Encoder
	goldenDump.EncodeXDR(&e)
	if !bytes.Equal(e.Bytes(), goldenDumpWire) {
		t.Errorf("encode:\n got %x\nwant %x", e.Bytes(), goldenDumpWire)
	}
	if l, err := DecodeDump([]byte{0, 0, 0, 0}); err != nil || len(l) != 0 {
		t.Errorf("empty list = %+v, %v", l, err)
	}
}

func TestDumpErrors(t *testing.T) {
	be := func(words ...uint32) []byte {
		var b []byte
		for _, w := range words {
			b = xdr.AppendUint32(b, w)
		}
		return b
	}
	long := func(n int) []byte { return append(be(1, 100000, 4, uint32(n)), make([]byte, n)...) }
	tests := []struct {
		name  string
		in    []byte
		entry int
		field string
		is    error
	}{
		{"empty input", nil, 0, "rpcblist_ptr", xdr.ErrShort},
		{"bad discriminant", be(2), 0, "rpcblist_ptr", xdr.ErrBadBool},
		{"truncated r_prog", be(1)[:6], 0, "rpcb_map.r_prog", xdr.ErrShort},
		{"truncated r_vers", be(1, 100000), 0, "rpcb_map.r_vers", xdr.ErrShort},
		{"r_netid too long", long(MaxNetIDLen + 1), 0, "rpcb_map.r_netid", xdr.ErrTooLong},
		{"r_netid beyond input", be(1, 100000, 4, 64, 0), 0, "rpcb_map.r_netid", xdr.ErrShort},
		{"r_addr too long", append(be(1, 100000, 4, 0, MaxAddrLen+1), make([]byte, MaxAddrLen+4)...), 0, "rpcb_map.r_addr", xdr.ErrTooLong},
		{"r_owner too long", append(be(1, 100000, 4, 0, 0, MaxOwnerLen+1), make([]byte, MaxOwnerLen+4)...), 0, "rpcb_map.r_owner", xdr.ErrTooLong},
		{"missing rpcb_next", goldenDumpWire[:len(goldenDumpWire)-4], 2, "rpcb_next", xdr.ErrShort},
		{"bad rpcb_next", append(goldenDumpWire[:len(goldenDumpWire)-4:len(goldenDumpWire)-4], 0, 0, 0, 7), 2, "rpcb_next", xdr.ErrBadBool},
		{"trailing", append(goldenDumpWire[:len(goldenDumpWire):len(goldenDumpWire)], 0, 0, 0, 0), 2, "rpcb_next", ErrTrailing},
	}
	for _, tc := range tests {
		_, err := DecodeDump(tc.in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Entry != tc.entry || fe.Field != tc.field || !errors.Is(err, tc.is) {
			t.Errorf("%s: %v; want entry %d field %s cause %v", tc.name, err, tc.entry, tc.field, tc.is)
		}
	}
	// More than MaxDumpEntries entries.
	var e xdr.Encoder
	m := RPCB{Prog: 1, Vers: 1}
	for i := 0; i <= MaxDumpEntries; i++ {
		e.Optional(true)
		m.EncodeXDR(&e)
	}
	e.Optional(false)
	if _, err := DecodeDump(e.Bytes()); !errors.Is(err, ErrTooManyEntries) || !strings.Contains(err.Error(), "entry 16384") {
		t.Errorf("%d entries: %v, want ErrTooManyEntries", MaxDumpEntries+1, err)
	}
}

func TestPmapGolden(t *testing.T) {
	wire := []byte{
		0, 0, 0, 1, // pmaplist: an entry follows
		0x00, 0x01, 0x86, 0xa0, 0, 0, 0, 2, 0, 0, 0, 6, 0, 0, 0, 111, // 100000 v2 tcp port 111
		0, 0, 0, 1, // next
		0x00, 0x01, 0x88, 0x30, 0, 0, 0, 1, 0, 0, 0, 17, 0x00, 0x00, 0x4e, 0x51, // 100400 v1 udp port 20049
		0, 0, 0, 0, // end
	}
	want := PmapList{{Prog: 100000, Vers: 2, Prot: IPProtoTCP, Port: 111}, {Prog: 100400, Vers: 1, Prot: IPProtoUDP, Port: 20049}}
	l, err := DecodePmapDump(wire)
	if err != nil || len(l) != 2 || l[0] != want[0] || l[1] != want[1] {
		t.Fatalf("DecodePmapDump = %+v, %v", l, err)
	}
	var e xdr.Encoder
	want.EncodeXDR(&e)
	if !bytes.Equal(e.Bytes(), wire) {
		t.Errorf("encode %x", e.Bytes())
	}
	for n := 0; n < len(wire); n += 4 {
		_, err := DecodePmapDump(wire[:n])
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, xdr.ErrShort) {
			t.Errorf("%d bytes: %v, want a short *FieldError", n, err)
		}
	}
	if _, err := DecodePmapDump(append(wire[:len(wire):len(wire)], 1)); !errors.Is(err, ErrTrailing) {
		t.Errorf("trailing byte: %v", err)
	}
}

func TestRPCBValidate(t *testing.T) {
	for _, m := range []RPCB{
		{NetID: strings.Repeat("n", MaxNetIDLen+1)},
		{Addr: strings.Repeat("a", MaxAddrLen+1)},
		{Owner: strings.Repeat("o", MaxOwnerLen+1)},
	} {
		if err := m.Validate(); !errors.Is(err, xdr.ErrTooLong) {
			t.Errorf("Validate: %v, want ErrTooLong", err)
		}
	}
	if err := goldenRPCB.Validate(); err != nil {
		t.Error(err)
	}
}

func BenchmarkDecodeDump(b *testing.B) {
	var l RPCBList
	d := xdr.NewDecoder(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(goldenDumpWire)))
	for b.Loop() {
		d.Reset(goldenDumpWire)
		if err := l.DecodeXDR(d); err != nil {
			b.Fatal(err)
		}
	}
}

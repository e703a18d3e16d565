package oncrpc

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	xdr2 "github.com/davecgh/go-xdr/xdr2"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// authsysParms mirrors authsys_parms for github.com/davecgh/go-xdr, an independent
// reflection-based encoder.
type authsysParms struct {
	Stamp       uint32
	MachineName string
	UID, GID    uint32
	GIDs        []uint32
}

func TestAuthSysGolden(t *testing.T) {
	want := unhex(t, authSysBodyHex)
	if got := sysParams.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("Append:\n got %x\nwant %x", got, want)
	}
	cred, err := NewAuthSys(&sysParams)
	if err != nil || cred.Flavor != AuthSys || !bytes.Equal(cred.Body, want) {
		t.Fatalf("NewAuthSys = %v %x, %v", cred.Flavor, cred.Body, err)
	}
}

func TestAuthSysCrossCheckGoXDR(t *testing.T) {
	cases := []AuthSysParams{
		sysParams,
		{},
		{Stamp: 1, MachineName: []byte("a"), GIDs: []uint32{}},
		{Stamp: 0xffffffff, MachineName: []byte("nfs-client.example.org"), UID: 65534, GID: 65534,
			GIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		{MachineName: bytes.Repeat([]byte("m"), MaxMachineNameLen), GIDs: []uint32{0}},
	}
	for i, p := range cases {
		var ref bytes.Buffer
		if _, err := xdr2.Marshal(&ref, authsysParms{p.Stamp, string(p.MachineName), p.UID, p.GID, append([]uint32{}, p.GIDs...)}); err != nil {
			t.Fatal(err)
		}
		if got := p.Append(nil); !bytes.Equal(got, ref.Bytes()) {
			t.Fatalf("case %d: ours %x\ngo-xdr %x", i, got, ref.Bytes())
		}
		var e xdr.Encoder
		p.EncodeXDR(&e)
		if !bytes.Equal(e.Bytes(), ref.Bytes()) {
			t.Fatalf("case %d: EncodeXDR differs from go-xdr", i)
		}
		// And go-xdr decodes what we decode.
		var q AuthSysParams
		if err := DecodeAuthSysBody(&q, ref.Bytes()); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var r authsysParms
		if _, err := xdr2.Unmarshal(bytes.NewReader(ref.Bytes()), &r); err != nil {
			t.Fatal(err)
		}
		if q.Stamp != r.Stamp || string(q.MachineName) != r.MachineName || q.UID != r.UID || q.GID != r.GID || len(q.GIDs) != len(r.GIDs) {
			t.Fatalf("case %d: decoded %+v, go-xdr %+v", i, q, r)
		}
		for j := range q.GIDs {
			if q.GIDs[j] != r.GIDs[j] {
				t.Fatalf("case %d: gid %d", i, j)
			}
		}
	}
}

func TestAuthSysLimits(t *testing.T) {
	long := AuthSysParams{MachineName: bytes.Repeat([]byte("x"), MaxMachineNameLen+1)}
	if _, err := NewAuthSys(&long); !errors.Is(err, ErrAuthSysTooLong) || !strings.Contains(err.Error(), "machinename") {
		t.Fatalf("256-byte machinename: %v", err)
	}
	many := AuthSysParams{GIDs: make([]uint32, MaxAuthSysGIDs+1)}
	if _, err := NewAuthSys(&many); !errors.Is(err, ErrAuthSysTooLong) || !strings.Contains(err.Error(), "gids") {
		t.Fatalf("17 gids: %v", err)
	}
	// The decoder enforces the same limits, and the trailing-bytes rule.
	for _, tc := range []struct {
		name, field string
		body        []byte
		is          error
	}{
		{"machinename 256", "machinename", long.Append(nil), xdr.ErrTooLong},
		{"gids 17", "gids", many.Append(nil), xdr.ErrTooLong},
		{"short stamp", "stamp", []byte{0, 0}, xdr.ErrShort},
		{"short machinename", "machinename", unhex(t, `00000000 00000008 41414141`), xdr.ErrShort},
		{"short uid", "uid", unhex(t, `00000000 00000000`), xdr.ErrShort},
		{"short gid", "gid", unhex(t, `00000000 00000000 00000000`), xdr.ErrShort},
		{"gids count beyond body", "gids", unhex(t, `00000000 00000000 00000000 00000000 00000003 00000001`), xdr.ErrShort},
		{"trailing bytes", "authsys_parms", append(sysParams.Append(nil), 0, 0, 0, 0), ErrAuthSysTrailing},
	} {
		var p AuthSysParams
		err := DecodeAuthSysBody(&p, tc.body)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want %v naming %s", tc.name, err, tc.is, tc.field)
		}
	}
}

func TestAuthSysDecodeReusesGIDs(t *testing.T) {
	body := sysParams.Append(nil)
	var p AuthSysParams
	if err := DecodeAuthSysBody(&p, body); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := DecodeAuthSysBody(&p, body); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per decode", allocs)
	}
}

func TestOpaqueAuthLimit(t *testing.T) {
	var a OpaqueAuth
	in := xdr.AppendOpaque(xdr.AppendUint32(nil, 1), make([]byte, MaxAuthBytes))
	if err := a.DecodeXDR(xdr.NewDecoder(in)); err != nil || len(a.Body) != MaxAuthBytes {
		t.Fatalf("400-byte body: %v", err)
	}
	in = xdr.AppendOpaque(xdr.AppendUint32(nil, 1), make([]byte, MaxAuthBytes+1))
	if err := a.DecodeXDR(xdr.NewDecoder(in)); !errors.Is(err, xdr.ErrTooLong) || !strings.Contains(err.Error(), "opaque_auth.body") {
		t.Fatalf("401-byte body: %v", err)
	}
}

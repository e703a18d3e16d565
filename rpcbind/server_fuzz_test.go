package rpcbind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Types FuzzDecodeXDR picks with its first byte.
const (
	fuzzMapping  = 0
	fuzzRPCB     = 1
	fuzzPmapList = 2
	fuzzRPCBList = 3
)

// fuzzTypeNames are the FieldError.Type of each type FuzzDecodeXDR decodes.
var fuzzTypeNames = [4]string{"mapping", "rpcb", "pmaplist", "rpcblist"}

// FuzzDecodeXDR decodes one of Mapping, RPCB (the arguments the Registry decodes),
// PmapList and RPCBList (first byte picks the type) from arbitrary input: no panic,
// a failure is a *FieldError naming the type and a field, and what decodes
// re-encodes to exactly as many bytes as were consumed, which decode to the same
// value. Seeds (testdata/fuzz/FuzzDecodeXDR): one per rule of the four decoders; see
// fuzzSeeds.
func FuzzDecodeXDR(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		kind := int(data[0] % 4)
		newValue := func() interface {
			xdr.EncoderTo
			xdr.DecoderFrom
		} {
			switch kind {
			case fuzzMapping:
				return &Mapping{}
			case fuzzRPCB:
				return &RPCB{}
			case fuzzPmapList:
				return &PmapList{}
			}
			return &RPCBList{}
		}
		m := newValue()
		d := xdr.NewDecoder(data[1:])
		if err := m.DecodeXDR(d); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Type != fuzzTypeNames[kind] || fe.Field == "" {
				t.Fatalf("%T: error %v is not a *FieldError naming a %s field", m, err, fuzzTypeNames[kind])
			}
			return
		}
		got := enc(m)
		if len(got) != d.Offset() {
			t.Fatalf("%T: consumed %d, re-encoded %d", m, d.Offset(), len(got))
		}
		again := newValue()
		if err := again.DecodeXDR(xdr.NewDecoder(got)); err != nil {
			t.Fatalf("%T: re-encoding does not decode: %v", m, err)
		}
		if !bytes.Equal(enc(again), got) {
			t.Fatalf("%T: %x decodes to %x", m, got, enc(again))
		}
	})
}

// registryProcs lists the procedures a Registry serves in each version.
var registryProcs = map[uint32][]uint32{
	Version2: {ProcNull, ProcSet, ProcUnset, ProcGetAddr, ProcDump},
	Version3: {ProcNull, ProcSet, ProcUnset, ProcGetAddr, ProcDump, ProcGetTime},
	Version4: {ProcNull, ProcSet, ProcUnset, ProcGetAddr, ProcDump, ProcGetTime, ProcGetVersAddr},
}

// FuzzRegistry calls a Registry's handlers as a loopback caller with arbitrary
// arguments. data[0] picks the version (2 + data[0]%3), data[1] the procedure
// (data[1]%16), the rest are the arguments. No panic; a procedure the version does not
// serve fails with PROC_UNAVAIL, bad arguments with GARBAGE_ARGS (wrapping the
// decoder's *FieldError), and any other call succeeds with a result that decodes as
// the procedure's result type with nothing left over. A successful SET has a netid
// and an address and is then visible to Lookup, owned by OwnerUnknown. Seeds (testdata/fuzz/FuzzRegistry): valid and malformed
// arguments of every served procedure of every version, and an unserved procedure;
// see fuzzSeeds.
func FuzzRegistry(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		vers, proc, args := Version2+uint32(data[0]%3), uint32(data[1]%16), data[2:]
		reg := NewRegistry()
		reg.SetPort(100003, 3, IPProtoTCP, 2049)
		h := reg.pmapHandler()
		if vers != Version2 {
			h = reg.rpcbHandler(vers)
		}
		req := &oncrpc.Request{
			Header:     oncrpc.CallHeader{Prog: Program, Vers: vers, Proc: proc},
			Args:       xdr.NewDecoder(args),
			RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 900},
		}
		var res xdr.Encoder
		err := h.ServeRPC(context.Background(), req, &res)
		served := false
		for _, p := range registryProcs[vers] {
			served = served || p == proc
		}
		if !served {
			if !errors.Is(err, oncrpc.ErrProcUnavail) {
				t.Fatalf("v%d proc %d is not served but answered %v", vers, proc, err)
			}
			return
		}
		if err != nil {
			var fe *FieldError
			if !errors.Is(err, oncrpc.ErrGarbageArgs) || !errors.As(err, &fe) || proc == ProcNull || proc == ProcDump || proc == ProcGetTime {
				t.Fatalf("v%d proc %d: error %v is not GARBAGE_ARGS from decoding the arguments", vers, proc, err)
			}
			return
		}
		d := xdr.NewDecoder(res.Bytes())
		var rerr error
		switch {
		case proc == ProcNull:
		case proc == ProcSet || proc == ProcUnset:
			var r boolResult
			rerr = r.DecodeXDR(d)
			if proc == ProcSet && bool(r) {
				var q RPCB
				if vers == Version2 {
					var m Mapping
					m.DecodeXDR(xdr.NewDecoder(args))
					q = RPCB{Prog: m.Prog, Vers: m.Vers, NetID: protNetID(m.Prot)}
				} else {
					q.DecodeXDR(xdr.NewDecoder(args))
				}
				if vers != Version2 && (q.NetID == "" || q.Addr == "") {
					t.Fatalf("v%d SET %+v with an empty r_netid or r_addr answered TRUE", vers, q)
				}
				q.Owner = OwnerUnknown // the caller's identity, not the r_owner it sent
				if g, ok := reg.Lookup(q.Prog, q.Vers, q.NetID); !ok || g.Owner != OwnerUnknown || (vers != Version2 && g != q) {
					t.Fatalf("v%d SET %+v answered TRUE, registry has %+v %v", vers, q, g, ok)
				}
			}
		case vers == Version2 && proc == ProcGetAddr, proc == ProcGetTime:
			var r uint32Result
			rerr = r.DecodeXDR(d)
		case proc == ProcGetAddr || proc == ProcGetVersAddr:
			var r stringResult
			rerr = r.DecodeXDR(d)
		case vers == Version2 && proc == ProcDump:
			var l PmapList
			rerr = l.DecodeXDR(d)
		case proc == ProcDump:
			var l RPCBList
			rerr = l.DecodeXDR(d)
		}
		if rerr != nil || d.Len() != 0 {
			t.Fatalf("v%d proc %d: result %x does not decode (%v) or has %d bytes left", vers, proc, res.Bytes(), rerr, d.Len())
		}
	})
}

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// fuzzSeeds returns the seed corpus of FuzzDecodeXDR and FuzzRegistry, by target and
// file name. TestFuzzCorpus checks that testdata/fuzz holds exactly these.
func fuzzSeeds() map[string]map[string][]byte {
	mapping := enc(&Mapping{Prog: 100003, Vers: 3, Prot: IPProtoTCP, Port: 2049})
	rpcb := enc(&RPCB{Prog: 100005, Vers: 3, NetID: "tcp", Addr: "0.0.0.0.8.1", Owner: "x"})
	query := enc(&RPCB{Prog: 100003, Vers: 3, NetID: "tcp"})
	long := func(n int) []byte { return cat([]byte{0, 0, byte(n >> 8), byte(n)}, make([]byte, (n+3)&^3)) }
	prefix := []byte{0, 1, 0x86, 0xa5, 0, 0, 0, 3} // r_prog, r_vers
	netidLong := cat(prefix, long(MaxNetIDLen+1), make([]byte, 8))
	addrLong := cat(prefix, []byte{0, 0, 0, 3, 't', 'c', 'p', 0}, long(MaxAddrLen+1), make([]byte, 4))
	ownerLong := cat(prefix, []byte{0, 0, 0, 3, 't', 'c', 'p', 0, 0, 0, 0, 0}, long(MaxOwnerLen+1))
	pmaplist := enc(&PmapList{{Prog: 1}, {Prog: 2}})
	rpcblist := enc(&RPCBList{{Prog: 1, NetID: "udp"}})
	t := func(kind byte, b []byte) []byte { return cat([]byte{kind}, b) }
	decode := map[string][]byte{
		"mapping":                   t(fuzzMapping, mapping),
		"mapping-prog-truncated":    t(fuzzMapping, mapping[:2]),
		"mapping-short":             {fuzzMapping, 0, 0, 0, 1}, // vers missing
		"mapping-prot-truncated":    t(fuzzMapping, mapping[:10]),
		"mapping-port-truncated":    t(fuzzMapping, mapping[:15]),
		"rpcb":                      t(fuzzRPCB, rpcb),
		"rpcb-r_prog-truncated":     t(fuzzRPCB, rpcb[:3]),
		"rpcb-r_vers-truncated":     t(fuzzRPCB, rpcb[:6]),
		"rpcb-netid-long":           t(fuzzRPCB, enc(&RPCB{NetID: strings.Repeat("n", 256)})),
		"rpcb-r_netid-over-limit":   t(fuzzRPCB, netidLong),
		"rpcb-truncated":            t(fuzzRPCB, enc(&RPCB{NetID: "tcp"})[:10]), // r_netid beyond input
		"rpcb-r_addr-over-limit":    t(fuzzRPCB, addrLong),
		"rpcb-r_addr-truncated":     t(fuzzRPCB, rpcb[:20]),
		"rpcb-r_owner-over-limit":   t(fuzzRPCB, ownerLong),
		"rpcb-r_owner-missing":      t(fuzzRPCB, rpcb[:len(rpcb)-8]),
		"pmaplist":                  t(fuzzPmapList, pmaplist),
		"pmaplist-empty":            t(fuzzPmapList, []byte{0, 0, 0, 0}),
		"pmaplist-missing":          t(fuzzPmapList, nil),
		"pmaplist-bad-bool":         {fuzzPmapList, 0, 0, 0, 2},
		"pmaplist-map-truncated":    t(fuzzPmapList, pmaplist[:12]),
		"pmaplist-next-missing":     t(fuzzPmapList, pmaplist[:20]),
		"rpcblist":                  t(fuzzRPCBList, rpcblist),
		"rpcblist-short":            {fuzzRPCBList, 0, 0, 0, 1, 0, 0},
		"rpcblist-bad-bool":         t(fuzzRPCBList, []byte{0, 0, 0, 7}),
		"rpcblist-next-missing":     t(fuzzRPCBList, rpcblist[:len(rpcblist)-4]),
		"rpcblist-netid-over-limit": t(fuzzRPCBList, cat([]byte{0, 0, 0, 1}, netidLong)),
	}
	call := func(vers uint32, proc byte, args []byte) []byte {
		return cat([]byte{byte(vers - Version2), proc}, args)
	}
	m4000 := enc(&Mapping{Prog: 400000, Vers: 1, Prot: IPProtoTCP, Port: 4000})
	rdma := enc(&RPCB{Prog: 100400, Vers: 1, NetID: "rdma", Addr: "192.0.2.1.78.81", Owner: "superuser"})
	registry := map[string][]byte{
		"v2-null":                  call(Version2, ProcNull, nil),
		"v2-set":                   call(Version2, ProcSet, m4000),
		"v2-set-existing":          call(Version2, ProcSet, mapping),
		"v2-set-bad-prot":          call(Version2, ProcSet, enc(&Mapping{Prog: 1, Vers: 1, Prot: 132, Port: 1})),
		"v2-set-port-over-65535":   call(Version2, ProcSet, enc(&Mapping{Prog: 1, Vers: 1, Prot: IPProtoUDP, Port: 70000})),
		"v2-set-truncated":         call(Version2, ProcSet, m4000[:12]),
		"v2-unset":                 call(Version2, ProcUnset, mapping),
		"v2-unset-truncated":       call(Version2, ProcUnset, mapping[:1]),
		"v2-getport":               call(Version2, ProcGetAddr, mapping),
		"v2-getport-truncated":     call(Version2, ProcGetAddr, []byte{0, 0, 0, 1}),
		"v2-dump":                  call(Version2, ProcDump, nil),
		"v2-callit-unavailable":    call(Version2, ProcCallit, nil),
		"v3-null":                  call(Version3, ProcNull, nil),
		"v3-set":                   call(Version3, ProcSet, rdma),
		"v3-set-existing":          call(Version3, ProcSet, query),
		"v3-set-netid-over-limit":  call(Version3, ProcSet, netidLong),
		"v3-unset":                 call(Version3, ProcUnset, query),
		"v3-unset-owner-missing":   call(Version3, ProcUnset, query[:len(query)-4]),
		"v3-getaddr":               call(Version3, ProcGetAddr, query),
		"v3-getaddr-addr-too-long": call(Version3, ProcGetAddr, addrLong),
		"v3-dump":                  call(Version3, ProcDump, nil),
		"v3-gettime":               call(Version3, ProcGetTime, nil),
		"v3-getversaddr-unavail":   call(Version3, ProcGetVersAddr, query),
		"v4-set":                   call(Version4, ProcSet, rdma),
		"v4-set-owner-over-limit":  call(Version4, ProcSet, ownerLong),
		"v4-unset-every-netid":     call(Version4, ProcUnset, enc(&RPCB{Prog: 100003, Vers: 3})),
		"v4-getaddr":               call(Version4, ProcGetAddr, query),
		"v4-getaddr-prog-only":     call(Version4, ProcGetAddr, query[:3]),
		"v4-getversaddr":           call(Version4, ProcGetVersAddr, query),
		"v4-getversaddr-truncated": call(Version4, ProcGetVersAddr, query[:9]),
		"v4-dump":                  call(Version4, ProcDump, nil),
		"v4-gettime":               call(Version4, ProcGetTime, nil),
		"v4-indirect-unavailable":  call(Version4, ProcIndirect, nil),
	}
	return map[string]map[string][]byte{"FuzzDecodeXDR": decode, "FuzzRegistry": registry}
}

// TestFuzzCorpus checks that testdata/fuzz/FuzzDecodeXDR and FuzzRegistry hold
// exactly the seeds of fuzzSeeds; RPCBIND_WRITE_CORPUS=1 (re)writes them.
func TestFuzzCorpus(t *testing.T) {
	write := os.Getenv("RPCBIND_WRITE_CORPUS") == "1"
	for target, seeds := range fuzzSeeds() {
		dir := filepath.Join("testdata", "fuzz", target)
		if write {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range seeds {
			want := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b)
			path := filepath.Join(dir, name)
			if write {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s is missing or stale (%v); regenerate with RPCBIND_WRITE_CORPUS=1", path, err)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(seeds) {
			t.Errorf("%s has %d files, fuzzSeeds %d", dir, len(entries), len(seeds))
		}
	}
}

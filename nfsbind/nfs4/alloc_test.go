package nfs4

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The server's hot path: a COMPOUND of SEQUENCE, PUTFH and READ or WRITE decoded one op
// at a time into reused values, and the reply encoded into a reused encoder, with the
// READ data as a payload, and a GETATTR limited to the supported attributes. None of
// it may allocate.

type hotServer struct {
	r   CompoundArgsReader
	d   xdr.Decoder
	seq SequenceArgs
	fh  PutfhArgs
	rd  ReadArgs
	wr  WriteArgs
	ga  GetattrArgs
	gr  GetattrRes
	e   xdr.Encoder
	w   CompoundResWriter
	buf []byte
}

func (s *hotServer) serve(tb testing.TB, call []byte, placed [][]byte) {
	s.d.Reset(call)
	s.d.SetPlaced(placed)
	if err := s.r.Reset(&s.d); err != nil {
		tb.Fatal(err)
	}
	s.e.Reset(s.e.Bytes()[:0])
	s.w.Begin(&s.e, s.r.Tag)
	status := OK
	for s.r.More() {
		op, err := s.r.Next()
		if err != nil {
			tb.Fatal(err)
		}
		d := s.r.Decoder()
		switch op {
		case OpSequence:
			if err := s.seq.DecodeXDR(d); err != nil {
				tb.Fatal(err)
			}
			res := SequenceRes{SessionID: s.seq.SessionID, SequenceID: s.seq.SequenceID, SlotID: s.seq.SlotID,
				HighestSlotID: s.seq.HighestSlotID, TargetHighestSlotID: 63}
			s.w.Op(op)
			res.EncodeXDR(&s.e)
		case OpPutfh:
			if err := s.fh.DecodeXDR(d); err != nil {
				tb.Fatal(err)
			}
			res := StatusRes{OpNum: op}
			s.w.Op(op)
			res.EncodeXDR(&s.e)
		case OpRead:
			if err := s.rd.DecodeXDR(d); err != nil {
				tb.Fatal(err)
			}
			res := ReadRes{EOF: false, Data: s.buf[:s.rd.Count]}
			s.w.Op(op)
			res.EncodeXDR(&s.e)
		case OpWrite:
			if err := s.wr.DecodeXDR(d); err != nil {
				tb.Fatal(err)
			}
			res := WriteRes{Count: uint32(len(s.wr.Data)), Committed: FileSync4}
			s.w.Op(op)
			res.EncodeXDR(&s.e)
		case OpGetattr:
			if err := s.ga.DecodeXDR(d); err != nil {
				tb.Fatal(err)
			}
			s.ga.AttrRequest.Intersect(hotSupported)
			s.gr.Mask = s.ga.AttrRequest
			s.w.Op(op)
			s.gr.EncodeXDR(&s.e)
		default:
			tb.Fatalf("unexpected %v", op)
		}
	}
	s.w.Finish(status)
}

var hotSupported = SupportedAttrs()

func hotCalls() (read, write []byte) {
	seq := &SequenceArgs{SessionID: testSession, SequenceID: 5, SlotID: 1, HighestSlotID: 7}
	read = encode(&CompoundArgs{MinorVersion: 1, Ops: []OpArgs{seq, &PutfhArgs{Object: testFH},
		&ReadArgs{Stateid: testStateid, Offset: 1 << 20, Count: 4096}}})
	var e xdr.Encoder
	(&CompoundArgs{MinorVersion: 1, Ops: []OpArgs{seq, &PutfhArgs{Object: testFH},
		&WriteArgs{Stateid: testStateid, Offset: 0, Stable: Unstable4, Data: make([]byte, 4096)},
		&GetattrArgs{AttrRequest: Bitmap4{0xffffffff, 0xffffffff, 0xffffffff}}}}).EncodeXDR(&e)
	return read, e.Bytes()
}

func TestHotPathAllocs(t *testing.T) {
	read, writeInline := hotCalls()
	placed := [][]byte{make([]byte, 4096)} // the WRITE data, as an RDMA read chunk delivers it
	s := &hotServer{buf: make([]byte, 8192), gr: GetattrRes{Attr: testAttr}}
	s.serve(t, read, nil) // warm up: grow the encoder's buffer and payload list
	s.serve(t, writeInline, placed)
	if n := testing.AllocsPerRun(100, func() { s.serve(t, read, nil) }); n != 0 {
		t.Errorf("SEQUENCE+PUTFH+READ: %v allocations per COMPOUND", n)
	}
	if len(s.e.Payloads()) != 1 || len(s.e.Payloads()[0].Data) != 4096 {
		t.Errorf("READ reply payloads %v", len(s.e.Payloads()))
	}
	if n := testing.AllocsPerRun(100, func() { s.serve(t, writeInline, placed) }); n != 0 {
		t.Errorf("SEQUENCE+PUTFH+WRITE+GETATTR: %v allocations per COMPOUND", n)
	}
	if !s.gr.Mask.Equal(hotSupported) {
		t.Errorf("GETATTR answered %v", s.gr.Mask)
	}
	if len(s.wr.Data) != 4096 || &s.wr.Data[0] != &placed[0][0] {
		t.Error("WRITE data is not the placed buffer")
	}
}

func BenchmarkCompoundReadServe(b *testing.B) {
	read, _ := hotCalls()
	s := &hotServer{buf: make([]byte, 8192)}
	b.ReportAllocs()
	for b.Loop() {
		s.serve(b, read, nil)
	}
}

// Decoding any operation's arguments or result into a value reused from a previous
// decode does not allocate: byte fields alias the input and lists reuse their storage.
func TestDecodeReusedAllocs(t *testing.T) {
	check := func(name string, in []byte, m Message) {
		t.Helper()
		var d xdr.Decoder
		d.Reset(in)
		if err := m.DecodeXDR(&d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := testing.AllocsPerRun(20, func() { d.Reset(in); _ = m.DecodeXDR(&d) }); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
	for _, a := range sampleArgs() {
		m, _ := NewArgs(a.Op())
		check(a.Op().String()+" args", encode(a), m)
	}
	for _, r := range sampleRes() {
		check(r.Op().String()+" res", encode(r), NewRes(r.Op()))
	}
}

func BenchmarkEncodeFattrAllSupported(b *testing.B) {
	a := testAttr
	a.SupportedAttrs, a.Filehandle = SupportedAttrs(), testFH
	mask := SupportedAttrs()
	e := xdr.NewEncoder(make([]byte, 0, 1024))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(e.Bytes()[:0])
		EncodeFattr(e, mask, &a)
	}
}

func BenchmarkOpenArgsDecode(b *testing.B) {
	var in []byte
	for _, a := range sampleArgs() {
		if o, ok := a.(*OpenArgs); ok && o.OpenType == Open4Create && o.How.Mode == Guarded4 {
			in = encode(o) // OPEN4_CREATE, GUARDED4 with a mode
		}
	}
	var a OpenArgs
	var d xdr.Decoder
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(in)
		if err := a.DecodeXDR(&d); err != nil {
			b.Fatal(err)
		}
	}
}

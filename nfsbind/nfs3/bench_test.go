package nfs3

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The per-RPC hot paths: a server decoding READ/WRITE/GETATTR arguments and encoding
// their results, a client doing the reverse. None may allocate.

func BenchmarkWriteArgsDecode(b *testing.B) {
	data := make([]byte, 4096)
	in := encode(&WriteArgs{File: testFH, Offset: 1 << 20, Count: 4096, Stable: Unstable, Data: data})
	var a WriteArgs
	var d xdr.Decoder
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		d.Reset(in)
		if err := a.DecodeXDR(&d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadResEncode(b *testing.B) {
	r := ReadRes{Attr: testPost, Count: 4096, Data: make([]byte, 4096)}
	e := xdr.NewEncoder(make([]byte, 0, 256))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(e.Bytes()[:0])
		r.EncodeXDR(e)
	}
}

func BenchmarkReadResDecodePlaced(b *testing.B) {
	r := ReadRes{Attr: testPost, Count: 4096, Data: make([]byte, 4096)}
	var e xdr.Encoder
	r.EncodeXDR(&e)
	inline := e.Bytes()
	placed := [][]byte{make([]byte, 4096)}
	var got ReadRes
	var d xdr.Decoder
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(inline)
		d.SetPlaced(placed)
		if err := got.DecodeXDR(&d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetattrRoundTrip(b *testing.B) {
	e := xdr.NewEncoder(make([]byte, 0, 256))
	var args FHArgs
	res := GetattrRes{Attr: testAttr}
	var got GetattrRes
	var d xdr.Decoder
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(e.Bytes()[:0])
		(&FHArgs{Object: testFH}).EncodeXDR(e)
		d.Reset(e.Bytes())
		if err := args.DecodeXDR(&d); err != nil {
			b.Fatal(err)
		}
		e.Reset(e.Bytes()[:0])
		res.EncodeXDR(e)
		d.Reset(e.Bytes())
		if err := got.DecodeXDR(&d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReaddirplusDecode(b *testing.B) {
	r := ReaddirplusRes{DirAttr: testPost}
	for i := 0; i < 100; i++ {
		r.Entries = append(r.Entries, DirEntryPlus{FileID: uint64(i), Name: []byte("file-name-0000"), Cookie: uint64(i + 1),
			Attr: testPost, Handle: PostOpFH{Present: true, FH: testFH}})
	}
	in := encode(&r)
	var got ReaddirplusRes
	var d xdr.Decoder
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(in)
		if err := got.DecodeXDR(&d); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHotPathsDoNotAllocate turns the benchmarks' claim into a test.
func TestHotPathsDoNotAllocate(t *testing.T) {
	in := encode(&WriteArgs{File: testFH, Count: 4, Data: []byte("abcd")})
	var a WriteArgs
	var d xdr.Decoder
	e := xdr.NewEncoder(make([]byte, 0, 256))
	r := ReadRes{Attr: testPost, Count: 4, Data: []byte("abcd")}
	var rd ReaddirRes
	rdIn := encode(sampleRes()[ProcReaddir])
	rd.Entries = make([]DirEntry, 0, 8)
	n := testing.AllocsPerRun(100, func() {
		d.Reset(in)
		if err := a.DecodeXDR(&d); err != nil {
			t.Fatal(err)
		}
		e.Reset(e.Bytes()[:0])
		r.EncodeXDR(e)
		d.Reset(rdIn)
		if err := rd.DecodeXDR(&d); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}

// The decoders of LOOKUP, SETATTR and CREATE arguments and of WRITE results name their
// fields in errors; the names are joined only when an error needs them.
func BenchmarkDirOpDecode(b *testing.B) {
	ts := SetTime{How: SetToClientTime, Time: Time{Seconds: 1, Nseconds: 2}}
	attr := Sattr{SetMode: true, Mode: 0o644, SetUID: true, SetGID: true, SetSize: true, Atime: ts, Mtime: ts}
	wcc := WccData{Before: PreOpAttr{Present: true}, After: testPost}
	for _, c := range []struct {
		name string
		m    Message
	}{
		{"LOOKUP3args", &LookupArgs{What: DirOpArgs{Dir: testFH, Name: []byte("name")}}},
		{"SETATTR3args", &SetattrArgs{Object: testFH, Attr: attr}},
		{"CREATE3args", &CreateArgs{Where: DirOpArgs{Dir: testFH, Name: []byte("name")}, Attr: attr}},
		{"WRITE3res", &WriteRes{Wcc: wcc, Count: 4096}},
	} {
		b.Run(c.name, func(b *testing.B) {
			in := encode(c.m)
			var d xdr.Decoder
			b.ReportAllocs()
			for b.Loop() {
				d.Reset(in)
				if err := c.m.DecodeXDR(&d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

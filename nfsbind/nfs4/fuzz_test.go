package nfs4

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// typedErr reports whether err is one of the failures this package promises: an
// *xdr.DecodeError, a *StatusError, or one of the package's sentinel causes.
func typedErr(err error) bool {
	var de *xdr.DecodeError
	var se *StatusError
	return errors.As(err, &de) || errors.As(err, &se) || errors.Is(err, ErrBadEnum) ||
		errors.Is(err, ErrCountMismatch) || errors.Is(err, ErrUnsupported)
}

// roundTrip is the property every fuzz target checks: decoding never panics; a failure
// is typed; a success re-encodes to bytes that decode to an equal value.
func roundTrip[T any, PT interface {
	*T
	Message
}](t *testing.T, data []byte, same func(a, b PT) string) {
	var v T
	p := PT(&v)
	if err := p.DecodeXDR(xdr.NewDecoder(data)); err != nil {
		if !typedErr(err) {
			t.Fatalf("untyped error %v", err)
		}
		return
	}
	out := encode(p)
	var v2 T
	p2 := PT(&v2)
	if err := p2.DecodeXDR(xdr.NewDecoder(out)); err != nil {
		t.Fatalf("re-encoded value does not decode: %v", err)
	}
	if diff := same(p, p2); diff != "" {
		t.Fatalf("round trip changed the value: %s", diff)
	}
}

func sameCompoundArgs(a, b *CompoundArgs) string {
	if string(a.Tag) != string(b.Tag) || a.MinorVersion != b.MinorVersion || len(a.Ops) != len(b.Ops) {
		return fmt.Sprintf("header %q/%d/%d vs %q/%d/%d", a.Tag, a.MinorVersion, len(a.Ops), b.Tag, b.MinorVersion, len(b.Ops))
	}
	for i := range a.Ops {
		if x, y := show(a.Ops[i]), show(b.Ops[i]); x != y {
			return fmt.Sprintf("op %d: %s vs %s", i, x, y)
		}
	}
	return ""
}

func sameCompoundRes(a, b *CompoundRes) string {
	if a.Status != b.Status || string(a.Tag) != string(b.Tag) || len(a.Results) != len(b.Results) {
		return "header"
	}
	for i := range a.Results {
		if x, y := show(a.Results[i]), show(b.Results[i]); x != y {
			return fmt.Sprintf("result %d: %s vs %s", i, x, y)
		}
	}
	return ""
}

func FuzzCompoundArgs(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, sameCompoundArgs)
		// The streaming reader agrees with the whole-value decoder.
		var r CompoundArgsReader
		if err := r.Reset(xdr.NewDecoder(data)); err != nil {
			return
		}
		for r.More() {
			op, err := r.Next()
			if err != nil {
				if !typedErr(err) {
					t.Fatalf("Next: untyped error %v", err)
				}
				return
			}
			if _, err := r.DecodeArgs(op); err != nil {
				if !typedErr(err) {
					t.Fatalf("untyped error %v", err)
				}
				return
			}
		}
	})
}

func FuzzCompoundRes(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, sameCompoundRes) })
}

// fattr4Msg adapts DecodeFattr/EncodeFattr to Message for the fuzz target.
type fattr4Msg struct {
	mask Bitmap4
	attr Fattr
}

func (m *fattr4Msg) EncodeXDR(e *xdr.Encoder)       { EncodeFattr(e, m.mask, &m.attr) }
func (m *fattr4Msg) DecodeXDR(d *xdr.Decoder) error { return DecodeFattr(d, &m.mask, &m.attr) }

func FuzzFattr(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, func(a, b *fattr4Msg) string {
			if !a.mask.Equal(b.mask) || show(a.attr) != show(b.attr) {
				return fmt.Sprintf("%v %+v vs %v %+v", a.mask, a.attr, b.mask, b.attr)
			}
			return ""
		})
	})
}

// FuzzCBCompound's first byte picks the direction: even decodes CB_COMPOUND4args, odd
// CB_COMPOUND4res.
func FuzzCBCompound(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		if data[0]%2 == 0 {
			roundTrip(t, data[1:], func(a, b *CBCompoundArgs) string {
				if show(a.Tag) != show(b.Tag) || len(a.Ops) != len(b.Ops) {
					return "header"
				}
				for i := range a.Ops {
					if show(a.Ops[i]) != show(b.Ops[i]) {
						return fmt.Sprintf("op %d", i)
					}
				}
				return ""
			})
			return
		}
		roundTrip(t, data[1:], func(a, b *CBCompoundRes) string {
			if a.Status != b.Status || len(a.Results) != len(b.Results) {
				return "header"
			}
			for i := range a.Results {
				if show(a.Results[i]) != show(b.Results[i]) {
					return fmt.Sprintf("result %d", i)
				}
			}
			return ""
		})
	})
}

// addSeeds adds the seeds of f's target from seedCorpus (the committed files in
// testdata/fuzz hold the same inputs; TestSeedCorpus keeps them in step).
func addSeeds(f *testing.F) {
	for _, s := range seedCorpus()[f.Name()] {
		f.Add(s.data)
	}
}

type seed struct {
	name string
	data []byte
	ok   bool // decodes without error
}

// seedCorpus builds every fuzz target's seeds from real encodings: each sample
// operation alone and all together, the hot-path COMPOUNDs, the fattr4 layouts, and
// malformed inputs that must fail.
func seedCorpus() map[string][]seed {
	m := map[string][]seed{}
	add := func(target, name string, data []byte, ok bool) {
		m[target] = append(m[target], seed{name, data, ok})
	}
	args := sampleArgs()
	add("FuzzCompoundArgs", "all-ops", encode(&CompoundArgs{Tag: []byte("all"), MinorVersion: 1, Ops: args}), true)
	for i, a := range args {
		add("FuzzCompoundArgs", fmt.Sprintf("op-%02d-%s", i, strings.ToLower(a.Op().String())),
			encode(&CompoundArgs{MinorVersion: 1, Ops: []OpArgs{&SequenceArgs{SessionID: testSession}, a}}), true)
	}
	read, _ := hotCalls()
	add("FuzzCompoundArgs", "sequence-putfh-read", read, true)
	add("FuzzCompoundArgs", "bad-illegal-op", []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0x30, 0x39}, false)
	add("FuzzCompoundArgs", "bad-fh-too-long", encode(&CompoundArgs{MinorVersion: 1, Ops: []OpArgs{&PutfhArgs{Object: make(FH, FHSize+1)}}}), false)
	add("FuzzCompoundArgs", "bad-owner-too-long", encode(&CompoundArgs{MinorVersion: 1, Ops: []OpArgs{
		&ExchangeIDArgs{ClientOwner: ClientOwner4{OwnerID: make([]byte, OpaqueLimit+1)}}}}), false)
	add("FuzzCompoundArgs", "bad-too-many-ops", []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0x10, 0, 1}, false)
	res := sampleRes()
	add("FuzzCompoundRes", "all-results", encode(&CompoundRes{Tag: []byte("all"), Results: res}), true)
	for i, r := range res {
		add("FuzzCompoundRes", fmt.Sprintf("res-%02d-%s", i, strings.ToLower(r.Op().String())),
			encode(&CompoundRes{Status: r.Result(), Results: []OpRes{r}}), true)
	}
	add("FuzzCompoundRes", "bad-undefined-resop", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 99, 0, 0, 0, 0}, false)
	all := testAttr
	all.SupportedAttrs, all.Filehandle, all.SuppattrExclcreat = SupportedAttrs(), testFH, setMask
	var e xdr.Encoder
	EncodeFattr(&e, SupportedAttrs(), &all)
	add("FuzzFattr", "all-supported", e.Bytes(), true)
	e.Reset(nil)
	EncodeFattr(&e, testAttrMask, &testAttr)
	add("FuzzFattr", "getattr", e.Bytes(), true)
	e.Reset(nil)
	EncodeFattr(&e, setMask, &setAttr)
	add("FuzzFattr", "setattr", e.Bytes(), true)
	add("FuzzFattr", "bad-acl-bit", []byte{0, 0, 0, 1, 0, 0, 0x10, 0, 0, 0, 0, 4, 0, 0, 0, 0}, false)
	add("FuzzFattr", "bad-trailing-vals", []byte{0, 0, 0, 1, 0, 0, 0, 0x10, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, false)
	cbArgs, cbRes := sampleCBArgs(), sampleCBRes()
	add("FuzzCBCompound", "args", append([]byte{0}, encode(&cbArgs)...), true)
	add("FuzzCBCompound", "res", append([]byte{1}, encode(&cbRes)...), true)
	add("FuzzCBCompound", "bad-cb-getattr", []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3}, false)
	return m
}

func seedDecodes(target string, data []byte) error {
	switch target {
	case "FuzzCompoundArgs":
		var c CompoundArgs
		return c.DecodeXDR(xdr.NewDecoder(data))
	case "FuzzCompoundRes":
		var c CompoundRes
		return c.DecodeXDR(xdr.NewDecoder(data))
	case "FuzzFattr":
		var m fattr4Msg
		return m.DecodeXDR(xdr.NewDecoder(data))
	case "FuzzCBCompound":
		if data[0]%2 == 0 {
			var c CBCompoundArgs
			return c.DecodeXDR(xdr.NewDecoder(data[1:]))
		}
		var c CBCompoundRes
		return c.DecodeXDR(xdr.NewDecoder(data[1:]))
	}
	return fmt.Errorf("unknown target %s", target)
}

// TestSeedCorpus checks that each seed decodes (or fails) as its name says and that the
// committed corpus files hold exactly the generated seeds. NFS4_WRITE_SEEDS=1 rewrites
// the files.
func TestSeedCorpus(t *testing.T) {
	write := os.Getenv("NFS4_WRITE_SEEDS") == "1"
	for target, seeds := range seedCorpus() {
		dir := filepath.Join("testdata", "fuzz", target)
		if write {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range seeds {
			err := seedDecodes(target, s.data)
			if (err == nil) != s.ok {
				t.Errorf("%s/%s: decode error %v, want ok=%v", target, s.name, err, s.ok)
			}
			if err != nil && !typedErr(err) {
				t.Errorf("%s/%s: untyped error %v", target, s.name, err)
			}
			file := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s.data)) + ")\n"
			path := filepath.Join(dir, s.name)
			if write {
				if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != file {
				t.Errorf("%s differs from the generated seed (err %v); run with NFS4_WRITE_SEEDS=1", path, err)
			}
		}
	}
}

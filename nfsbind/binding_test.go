package nfsbind

import (
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func size(m nfs3.Message) int {
	var e xdr.Encoder
	m.EncodeXDR(&e)
	return len(xdr.Flatten(nil, e.Bytes(), e.Payloads()))
}

// worstResults builds, for every procedure, the largest result RFC 1813 allows for the
// given arguments: all optional attributes present, 64-byte handles, longest paths.
func worstResults(readCount uint32, dirCount uint32) map[nfs3.Proc]nfs3.Message {
	fh := make(nfs3.FH, nfs3.FHSize)
	pa := nfs3.PostOpAttr{Present: true}
	wcc := nfs3.WccData{Before: nfs3.PreOpAttr{Present: true}, After: pa}
	create := &nfs3.CreateRes{Obj: nfs3.PostOpFH{Present: true, FH: fh}, ObjAttr: pa, DirWcc: wcc}
	// Fill a directory listing up to exactly dirCount bytes of READDIR3resok.
	rd := &nfs3.ReaddirRes{DirAttr: pa}
	for used := nfs3.ReaddirResOverhead - 4; ; {
		n := nfs3.DirEntrySize(4)
		if used+n > int(dirCount) {
			break
		}
		rd.Entries = append(rd.Entries, nfs3.DirEntry{Name: []byte("abcd")})
		used += n
	}
	rdp := &nfs3.ReaddirplusRes{DirAttr: pa}
	for used := nfs3.ReaddirResOverhead - 4; ; {
		en := nfs3.DirEntryPlus{Name: []byte("abcd"), Attr: pa, Handle: nfs3.PostOpFH{Present: true, FH: fh}}
		if used+en.Size() > int(dirCount) {
			break
		}
		rdp.Entries = append(rdp.Entries, en)
		used += en.Size()
	}
	return map[nfs3.Proc]nfs3.Message{
		nfs3.ProcNull:        &nfs3.Void{},
		nfs3.ProcGetattr:     &nfs3.GetattrRes{},
		nfs3.ProcSetattr:     &nfs3.WccRes{Wcc: wcc},
		nfs3.ProcLookup:      &nfs3.LookupRes{Object: fh, ObjAttr: pa, DirAttr: pa},
		nfs3.ProcAccess:      &nfs3.AccessRes{Attr: pa},
		nfs3.ProcReadlink:    &nfs3.ReadlinkRes{Attr: pa, Data: make([]byte, nfs3.MaxNFSPathLen)},
		nfs3.ProcRead:        &nfs3.ReadRes{Attr: pa, Count: readCount, Data: make([]byte, readCount)},
		nfs3.ProcWrite:       &nfs3.WriteRes{Wcc: wcc},
		nfs3.ProcCreate:      create,
		nfs3.ProcMkdir:       create,
		nfs3.ProcSymlink:     create,
		nfs3.ProcMknod:       create,
		nfs3.ProcRemove:      &nfs3.WccRes{Wcc: wcc},
		nfs3.ProcRmdir:       &nfs3.WccRes{Wcc: wcc},
		nfs3.ProcRename:      &nfs3.RenameRes{FromDirWcc: wcc, ToDirWcc: wcc},
		nfs3.ProcLink:        &nfs3.LinkRes{FileAttr: pa, LinkDirWcc: wcc},
		nfs3.ProcReaddir:     rd,
		nfs3.ProcReaddirplus: rdp,
		nfs3.ProcFsstat:      &nfs3.FsstatRes{Attr: pa},
		nfs3.ProcFsinfo:      &nfs3.FsinfoRes{Attr: pa},
		nfs3.ProcPathconf:    &nfs3.PathconfRes{Attr: pa},
		nfs3.ProcCommit:      &nfs3.CommitRes{Wcc: wcc},
	}
}

func argsFor(p nfs3.Proc, readCount, dirCount uint32) nfs3.Message {
	switch p {
	case nfs3.ProcRead:
		return &nfs3.ReadArgs{Count: readCount}
	case nfs3.ProcReaddir:
		return &nfs3.ReaddirArgs{Count: dirCount}
	case nfs3.ProcReaddirplus:
		return &nfs3.ReaddirplusArgs{DirCount: dirCount, MaxCount: dirCount}
	}
	return nil
}

// MaxResults is an upper bound, and a tight one: the worst-case result meets it.
func TestMaxResultsBoundsWorstCase(t *testing.T) {
	for _, rc := range []uint32{0, 1, 4095, 4096, 1 << 20} {
		for _, dc := range []uint32{512, 8192, 65536} {
			for p, res := range worstResults(rc, dc) {
				max, err := MaxResults(p, argsFor(p, rc, dc))
				if err != nil {
					t.Fatalf("%v: %v", p, err)
				}
				got := size(res)
				if got > max {
					t.Errorf("%v (read %d, dir %d): result %d bytes exceeds bound %d", p, rc, dc, got, max)
				}
				// Directory listings fill to within one entry of the bound.
				slack := 0
				if p == nfs3.ProcReaddir || p == nfs3.ProcReaddirplus {
					slack = 4 + nfs3.FattrSize + 4 + 8 + 8 + 8 + 4 + nfs3.FHSize + 8
				}
				if got+slack < max {
					t.Errorf("%v (read %d, dir %d): bound %d is loose, worst case %d", p, rc, dc, max, got)
				}
			}
		}
	}
}

func TestRules(t *testing.T) {
	rs := Rules()
	if len(rs) != nfs3.NumProcs {
		t.Fatalf("%d rules", len(rs))
	}
	for _, r := range rs {
		switch r.Proc {
		case nfs3.ProcWrite:
			if r.Call != ReadChunk || r.Reply != Inline || r.CallItem != "WRITE3args.data" {
				t.Errorf("WRITE: %+v", r)
			}
		case nfs3.ProcRead:
			if r.Reply != WriteChunk || r.Call != Inline || r.ReplyItem != "READ3resok.data" {
				t.Errorf("READ: %+v", r)
			}
		case nfs3.ProcReaddir, nfs3.ProcReaddirplus, nfs3.ProcReadlink:
			if r.Reply != ReplyChunk || r.Call != Inline {
				t.Errorf("%v: %+v", r.Proc, r)
			}
		default:
			if r.Call != Inline || r.Reply != Inline {
				t.Errorf("%v: %+v", r.Proc, r)
			}
		}
	}
	if _, ok := RuleFor(nfs3.NumProcs); ok {
		t.Error("RuleFor accepted an undefined procedure")
	}
	if r, _ := RuleFor(nfs3.ProcSymlink); len(r.RFCEligible) != 1 || r.Call != Inline {
		t.Errorf("SYMLINK: %+v", r)
	}
}

// The codec and the binding agree: exactly the items the rules move by chunk are
// payloads, at the XDR position a chunk would carry.
func TestCodecMarksBoundItems(t *testing.T) {
	w := &nfs3.WriteArgs{File: nfs3.FH{1, 2, 3}, Count: 3, Data: []byte("abc")}
	var e xdr.Encoder
	w.EncodeXDR(&e)
	if len(e.Payloads()) != 1 {
		t.Fatalf("WRITE3args has %d payloads", len(e.Payloads()))
	}
	res := worstResults(4097, 8192)
	for p, m := range res {
		e.Reset(nil)
		m.EncodeXDR(&e)
		r, _ := RuleFor(p)
		want := 0
		if r.Reply == WriteChunk {
			want = 1
		}
		if len(e.Payloads()) != want {
			t.Errorf("%v results: %d payloads, rule says %v", p, len(e.Payloads()), r.Reply)
		}
		if want == 1 {
			inl, _ := MaxReplyInline(p, &nfs3.ReadArgs{Count: 4097})
			if e.Len()+ReplyHeaderSize != inl {
				t.Errorf("READ inline part %d, MaxReplyInline %d", e.Len()+ReplyHeaderSize, inl)
			}
		}
	}
}

func TestNeedsReplyChunk(t *testing.T) {
	cases := []struct {
		p    nfs3.Proc
		args nfs3.Message
		recv int
		want bool
	}{
		{nfs3.ProcRead, &nfs3.ReadArgs{Count: 1 << 20}, 3996, false}, // data goes by write chunk
		{nfs3.ProcReaddir, &nfs3.ReaddirArgs{Count: 32768}, 3996, true},
		{nfs3.ProcReaddir, &nfs3.ReaddirArgs{Count: 1024}, 3996, false},
		{nfs3.ProcReaddirplus, &nfs3.ReaddirplusArgs{DirCount: 512, MaxCount: 4096}, 3996, true},
		{nfs3.ProcReadlink, nil, 1024, true},
		{nfs3.ProcReadlink, nil, 3996, true}, // a 4095-byte link does not fit
		{nfs3.ProcReadlink, nil, 8192, false},
		{nfs3.ProcGetattr, nil, 1024, false},
	}
	for _, c := range cases {
		got, err := NeedsReplyChunk(c.p, c.args, c.recv)
		if err != nil || got != c.want {
			t.Errorf("%v %+v at %d: %v, %v; want %v", c.p, c.args, c.recv, got, err, c.want)
		}
	}
	if _, err := MaxReply(nfs3.ProcRead, &nfs3.WriteArgs{}); !errors.Is(err, ErrArgsType) {
		t.Errorf("wrong args type: %v", err)
	}
	if _, err := MaxReply(nfs3.NumProcs, nil); err == nil {
		t.Error("undefined procedure accepted")
	}
}

func TestPadSegment(t *testing.T) {
	for c, want := range map[uint32]bool{0: false, 1: true, 2: true, 3: true, 4: false, 4097: true, 1 << 20: false} {
		if PadSegment(c) != want {
			t.Errorf("PadSegment(%d) = %v", c, !want)
		}
	}
}

// The READDIR and READDIRPLUS reply bounds hold for a Linux knfsd reply too: knfsd
// bounds only the directory list (entries, the last value_follows and eof) by count
// and adds the status, dir_attributes and cookieverf outside it
// (nfsd3_init_dirlist_pages), so an RDMA reply chunk sized by MaxReply must allow for
// them.
func TestMaxResultsReaddirLinuxServer(t *testing.T) {
	linuxReaddir := func(count uint32) *nfs3.ReaddirRes {
		r := &nfs3.ReaddirRes{DirAttr: nfs3.PostOpAttr{Present: true}}
		for used := 8; used+nfs3.DirEntrySize(4) <= int(count); used += nfs3.DirEntrySize(4) {
			r.Entries = append(r.Entries, nfs3.DirEntry{Name: []byte("abcd")})
		}
		return r
	}
	for _, count := range []uint32{512, 4096, 8192, 32768} {
		res := linuxReaddir(count)
		if n, _ := MaxResults(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Count: count}); size(res) > n {
			t.Errorf("READDIR count %d: a Linux reply of %d bytes, MaxResults %d", count, size(res), n)
		}
		plus := &nfs3.ReaddirplusRes{DirAttr: res.DirAttr}
		for used := 8; ; {
			e := nfs3.DirEntryPlus{Name: []byte("abcd"), Attr: nfs3.PostOpAttr{Present: true}, Handle: nfs3.PostOpFH{Present: true, FH: make(nfs3.FH, nfs3.FHSize)}}
			if used+e.Size() > int(count) {
				break
			}
			plus.Entries = append(plus.Entries, e)
			used += e.Size()
		}
		if n, _ := MaxResults(nfs3.ProcReaddirplus, &nfs3.ReaddirplusArgs{DirCount: count, MaxCount: count}); size(plus) > n {
			t.Errorf("READDIRPLUS maxcount %d: a Linux reply of %d bytes, MaxResults %d", count, size(plus), n)
		}
	}
}

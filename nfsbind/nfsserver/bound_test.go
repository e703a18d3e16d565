//go:build linux

package nfsserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// resultsSize runs one call in process and returns the size of its results (the
// whole logical stream, payload included) and the decoded status.
func resultsSize(t *testing.T, h oncrpc.Handler, proc nfs3.Proc, args nfs3.Message) (int, nfs3.Message) {
	t.Helper()
	req := &oncrpc.Request{
		Header:     oncrpc.CallHeader{XID: 9, Prog: nfs3.Program, Vers: nfs3.Version, Proc: uint32(proc)},
		AuthSys:    &oncrpc.AuthSysParams{},
		Args:       xdr.NewDecoder(encodeMsg(args)),
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9},
	}
	var e xdr.Encoder
	if err := h.ServeRPC(context.Background(), req, &e); err != nil {
		t.Fatalf("%v: %v", proc, err)
	}
	flat := xdr.Flatten(nil, e.Bytes(), e.Payloads())
	res := nfs3.NewRes(proc)
	if err := res.DecodeXDR(xdr.NewDecoder(flat)); err != nil {
		t.Fatalf("%v results: %v", proc, err)
	}
	return len(flat), res
}

// Every reply the server sends fits the bound package nfsbind computes from the call,
// which is what an RDMA client sizes its reply chunk by.
func TestRepliesWithinMaxReply(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "d")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("%s-%03d", strings.Repeat("n", 1+i%200), i)
		if err := os.WriteFile(filepath.Join(sub, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Repeat("t", nfs3.MaxNFSPathLen-1), filepath.Join(dir, "ln")); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Root: dir, HandleKey: fuzzKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.NFSHandler()
	root := s.RootHandle()
	lookup := func(name string) nfs3.FH {
		_, res := resultsSize(t, h, nfs3.ProcLookup, &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte(name)}})
		return append(nfs3.FH(nil), res.(*nfs3.LookupRes).Object...)
	}
	d, f, ln := lookup("d"), lookup("f"), lookup("ln")
	check := func(proc nfs3.Proc, args nfs3.Message) nfs3.Message {
		t.Helper()
		n, res := resultsSize(t, h, proc, args)
		max, err := nfsbind.MaxResults(proc, args)
		if err != nil {
			t.Fatal(err)
		}
		if n > max {
			t.Fatalf("%v %+v: results of %d bytes exceed MaxResults %d", proc, args, n, max)
		}
		return res
	}
	for _, count := range []uint32{200, 1000, 8192, 65536} {
		var cookie uint64
		for {
			r := check(nfs3.ProcReaddir, &nfs3.ReaddirArgs{Dir: d, Cookie: cookie, Count: count}).(*nfs3.ReaddirRes)
			if r.Status != nfs3.StatusOK || r.EOF || len(r.Entries) == 0 {
				break
			}
			cookie = r.Entries[len(r.Entries)-1].Cookie
		}
		for _, dircount := range []uint32{0, 512, count} {
			var cookie uint64
			for {
				r := check(nfs3.ProcReaddirplus, &nfs3.ReaddirplusArgs{Dir: d, Cookie: cookie, DirCount: dircount, MaxCount: count}).(*nfs3.ReaddirplusRes)
				if r.Status != nfs3.StatusOK || r.EOF || len(r.Entries) == 0 {
					break
				}
				cookie = r.Entries[len(r.Entries)-1].Cookie
			}
		}
	}
	for _, count := range []uint32{0, 1, 3, 4097, 10000, 1 << 20} {
		check(nfs3.ProcRead, &nfs3.ReadArgs{File: f, Count: count})
		check(nfs3.ProcRead, &nfs3.ReadArgs{File: f, Offset: 9999, Count: count})
	}
	check(nfs3.ProcReadlink, &nfs3.ReadlinkArgs{Object: ln})
	check(nfs3.ProcGetattr, &nfs3.GetattrArgs{Object: f})
	check(nfs3.ProcLookup, &nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("d")}})
	check(nfs3.ProcAccess, &nfs3.AccessArgs{Object: f, Access: 0x3f})
	check(nfs3.ProcFsstat, &nfs3.FsstatArgs{Object: root})
	check(nfs3.ProcFsinfo, &nfs3.FsinfoArgs{Object: root})
	check(nfs3.ProcPathconf, &nfs3.PathconfArgs{Object: root})
	check(nfs3.ProcWrite, &nfs3.WriteArgs{File: f, Count: 3, Data: []byte("abc"), Stable: nfs3.FileSync})
	check(nfs3.ProcCommit, &nfs3.CommitArgs{File: f})
	check(nfs3.ProcCreate, &nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("new")}, Mode: nfs3.Guarded})
	check(nfs3.ProcMkdir, &nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("nd")}})
	check(nfs3.ProcSymlink, &nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: root, Name: []byte("nl")}, Data: []byte("x")})
	check(nfs3.ProcLink, &nfs3.LinkArgs{File: f, Link: nfs3.DirOpArgs{Dir: root, Name: []byte("hl")}})
	check(nfs3.ProcRename, &nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: root, Name: []byte("hl")}, To: nfs3.DirOpArgs{Dir: d, Name: []byte("hl2")}})
	check(nfs3.ProcRemove, &nfs3.RemoveArgs{What: nfs3.DirOpArgs{Dir: d, Name: []byte("hl2")}})
	check(nfs3.ProcRmdir, &nfs3.RmdirArgs{What: nfs3.DirOpArgs{Dir: root, Name: []byte("nd")}})
	check(nfs3.ProcSetattr, &nfs3.SetattrArgs{Object: f, Attr: nfs3.Sattr{SetMode: true, Mode: 0o600}})
}

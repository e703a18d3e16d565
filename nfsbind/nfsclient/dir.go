package nfsclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/go-rpcrdma/rpcrdma/nfsbind"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Entry is one directory entry of a listing. Attr and FH are zero when the server did
// not return them, and always with READDIR.
type Entry struct {
	Name   string
	FileID uint64
	Attr   nfs3.Fattr
	FH     nfs3.FH
}

// maxDirEntries bounds the entries of one listing that Readdir and ReaddirPlus
// collect, so that a server that never ends a directory cannot grow the client without
// bound. ReaddirSeq and ReaddirPlusSeq hold one reply at a time and leave the bound to
// their caller.
var maxDirEntries = 1 << 22

// ReaddirPlus lists directory dir with READDIRPLUS, "." and ".." left out, following
// cookies until the server reports the end. Each reply is bounded by the server's
// preferred size (dtpref) for directory information and 8 times that in total. A
// server that never ends the directory (a cookie it returns again, or more than
// 4,194,304 entries) gets an error; ReaddirPlusSeq lists a directory of any size. An
// entry whose name is empty or holds a "/" or a NUL byte is an error too, in every
// listing: each Name returned is a single path component other than "." and "..".
func (c *Client) ReaddirPlus(ctx context.Context, dir nfs3.FH) ([]Entry, error) {
	return c.collect(ctx, dir, true)
}

// Readdir lists directory dir with READDIR (names and file ids only, "." and ".."
// left out), each reply bounded by the server's preferred size (dtpref), with
// ReaddirPlus's guard against a directory that never ends.
func (c *Client) Readdir(ctx context.Context, dir nfs3.FH) ([]Entry, error) {
	return c.collect(ctx, dir, false)
}

// ReaddirPlusSeq yields the entries of directory dir as ReaddirPlus finds them, one
// READDIRPLUS reply at a time, so that a directory of any size is listed in the memory
// of one reply. An error ends the sequence with a zero Entry and the error; a cookie
// the server returns again is one. Breaking out of the loop stops the listing, and so
// does ctx: a caller that lists a server it does not trust bounds the listing by either.
func (c *Client) ReaddirPlusSeq(ctx context.Context, dir nfs3.FH) iter.Seq2[Entry, error] {
	return c.seq(ctx, dir, true)
}

// ReaddirSeq is ReaddirPlusSeq with READDIR: names and file ids only.
func (c *Client) ReaddirSeq(ctx context.Context, dir nfs3.FH) iter.Seq2[Entry, error] {
	return c.seq(ctx, dir, false)
}

// errStopped ends a listing whose consumer stopped early.
var errStopped = errors.New("nfsclient: listing stopped")

func (c *Client) seq(ctx context.Context, dir nfs3.FH, plus bool) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		err := c.listDir(ctx, dir, plus, func(page []Entry, _ bool) error {
			for _, e := range page {
				if !yield(e, nil) {
					return errStopped
				}
			}
			return nil
		})
		if err != nil && err != errStopped {
			yield(Entry{}, err)
		}
	}
}

func (c *Client) collect(ctx context.Context, dir nfs3.FH, plus bool) ([]Entry, error) {
	var out []Entry
	err := c.listDir(ctx, dir, plus, func(page []Entry, eof bool) error {
		out = append(out, page...)
		if !eof && len(out) > maxDirEntries {
			return fmt.Errorf("nfsclient: %s: more than %d entries without the end of the directory", dirProc(plus), maxDirEntries)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func dirProc(plus bool) string {
	if plus {
		return "READDIRPLUS"
	}
	return "READDIR"
}

// validName reports whether name, from a directory entry, can name a file in the
// directory: not empty, and without a "/" (which would make it a path) or a NUL byte.
func validName(name []byte) bool {
	return len(name) > 0 && bytes.IndexByte(name, '/') < 0 && bytes.IndexByte(name, 0) < 0
}

// listDir walks directory dir with READDIR or READDIRPLUS, handing each reply's
// entries ("." and ".." left out) to page, with eof set on the last. The page slice is
// reused from one reply to the next; its entries' names and handles are the caller's.
// An error from page ends the walk with that error. A server that returns a cookie it
// has already been asked from is in a loop and gets an error (where Linux's client warns
// of a readdir loop), as does one that returns no entries without the end, and one
// that returns a name that is no file name (see validName), which Linux's readdir
// fails with EUCLEAN.
func (c *Client) listDir(ctx context.Context, dir nfs3.FH, plus bool, page func([]Entry, bool) error) error {
	proc, name := nfs3.ProcReaddir, dirProc(plus)
	var args nfs3.Message
	rargs := nfs3.ReaddirArgs{Dir: dir, Count: c.dtpref}
	pargs := nfs3.ReaddirplusArgs{Dir: dir, DirCount: c.dtpref, MaxCount: 8 * c.dtpref}
	if plus {
		proc, args = nfs3.ProcReaddirplus, &pargs
	} else {
		args = &rargs
	}
	maxReply, _ := nfsbind.MaxReply(proc, args)
	var (
		rr     nfs3.ReaddirRes
		pr     nfs3.ReaddirplusRes
		status nfs3.Status
		eof    bool
		last   uint64
		verf   [nfs3.CookieVerfSize]byte
		ents   []Entry
		n      int // entries in the reply, "." and ".." included
		asked  = make(map[uint64]struct{})
		bad    []byte // the reply's first name that is no file name
		hasBad bool   // there is one
	)
	check := func(name []byte) {
		if !hasBad && !validName(name) {
			bad, hasBad = bytes.Clone(name), true
		}
	}
	decode := decodeFunc(func(d *xdr.Decoder) error {
		ents = ents[:0]
		if plus {
			if err := pr.DecodeXDR(d); err != nil {
				return err
			}
			status, eof, verf = pr.Status, pr.EOF, pr.CookieVerf
			for i := range pr.Entries {
				en := &pr.Entries[i]
				last = en.Cookie
				if string(en.Name) == "." || string(en.Name) == ".." {
					continue
				}
				check(en.Name)
				e := Entry{Name: string(en.Name), FileID: en.FileID}
				if en.Attr.Present {
					e.Attr = en.Attr.Attr
				}
				if en.Handle.Present {
					e.FH = bytes.Clone(en.Handle.FH)
				}
				ents = append(ents, e)
			}
			n = len(pr.Entries)
			return nil
		}
		if err := rr.DecodeXDR(d); err != nil {
			return err
		}
		status, eof, verf = rr.Status, rr.EOF, rr.CookieVerf
		for i := range rr.Entries {
			en := &rr.Entries[i]
			last = en.Cookie
			if string(en.Name) != "." && string(en.Name) != ".." {
				check(en.Name)
				ents = append(ents, Entry{Name: string(en.Name), FileID: en.FileID})
			}
		}
		n = len(rr.Entries)
		return nil
	})
	for {
		if err := c.call(ctx, proc, args, decode, maxReply); err != nil {
			return err
		}
		if err := opErr(proc, "", status); err != nil {
			return err
		}
		if hasBad {
			return fmt.Errorf("nfsclient: %s: the server returned an invalid entry name %q (empty, or with a slash or a NUL byte)", name, bad)
		}
		if err := page(ents, eof); err != nil || eof {
			return err
		}
		if n == 0 {
			return fmt.Errorf("nfsclient: %s: no entries and no end of directory", name)
		}
		if _, again := asked[last]; again {
			return fmt.Errorf("nfsclient: %s: the server returned cookie %d again: a directory that never ends (cookie loop)", name, last)
		}
		asked[last] = struct{}{}
		rargs.Cookie, rargs.CookieVerf = last, verf
		pargs.Cookie, pargs.CookieVerf = last, verf
	}
}

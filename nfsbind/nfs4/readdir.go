package nfs4

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ReaddirArgs is READDIR4args.
//
//	struct READDIR4args {
//	   nfs_cookie4 cookie; verifier4 cookieverf; count4 dircount; count4 maxcount;
//	   bitmap4 attr_request; };
type ReaddirArgs struct {
	Cookie      uint64
	CookieVerf  Verifier
	DirCount    uint32 // bytes of directory information (cookies and names), a hint
	MaxCount    uint32 // bytes of READDIR4resok
	AttrRequest Bitmap4
}

// Op returns OpReaddir.
func (a *ReaddirArgs) Op() OpNum { return OpReaddir }

// EncodeXDR encodes READDIR4args.
func (a *ReaddirArgs) EncodeXDR(e *xdr.Encoder) {
	e.Uint64(a.Cookie)
	e.FixedOpaque(a.CookieVerf[:])
	e.Uint32(a.DirCount)
	e.Uint32(a.MaxCount)
	a.AttrRequest.EncodeXDR(e)
}

// DecodeXDR decodes READDIR4args.
func (a *ReaddirArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "READDIR4args"
	if d.Len() < 24 {
		_, err = d.FixedOpaque(24)
		return field(n, err)
	}
	a.Cookie, _ = d.Uint64()
	_ = a.CookieVerf.decode(d, "")
	a.DirCount, _ = d.Uint32()
	a.MaxCount, _ = d.Uint32()
	return a.AttrRequest.decode(d, n+".attr_request")
}

// Entry4 is entry4, one directory entry with its attributes.
//
//	struct entry4 { nfs_cookie4 cookie; component4 name; fattr4 attrs; entry4 *nextentry; };
type Entry4 struct {
	Cookie uint64
	Name   []byte
	Mask   Bitmap4
	Attrs  Fattr
}

// ReaddirRes is READDIR4res. Over RPC-over-RDMA a large READDIR reply travels in a reply
// chunk (RFC 8267); nothing in it is DDP-eligible.
//
//	struct dirlist4 { entry4 *entries; bool eof; };
//	struct READDIR4resok { verifier4 cookieverf; dirlist4 reply; };
type ReaddirRes struct {
	Status     Status
	CookieVerf Verifier
	Entries    []Entry4
	EOF        bool
}

// Op returns OpReaddir.
func (r *ReaddirRes) Op() OpNum { return OpReaddir }

// Result returns the status.
func (r *ReaddirRes) Result() Status { return r.Status }

// EncodeXDR encodes READDIR4res with every entry; a server bounding the reply by the
// call's counts uses ReaddirEncoder.
func (r *ReaddirRes) EncodeXDR(e *xdr.Encoder) {
	e.Uint32(uint32(r.Status))
	if r.Status != OK {
		return
	}
	e.FixedOpaque(r.CookieVerf[:])
	for i := range r.Entries {
		en := &r.Entries[i]
		e.Optional(true)
		e.Uint64(en.Cookie)
		e.Opaque(en.Name)
		EncodeFattr(e, en.Mask, &en.Attrs)
	}
	e.Optional(false)
	e.Bool(r.EOF)
}

// DecodeXDR decodes READDIR4res, reusing the entries' storage. The number of entries is
// bounded by the bytes present.
func (r *ReaddirRes) DecodeXDR(d *xdr.Decoder) (err error) {
	const n = "READDIR4res"
	r.Entries, r.EOF = r.Entries[:0], false
	if r.Status, err = decodeStatus(d, n); err != nil || r.Status != OK {
		return err
	}
	if err = r.CookieVerf.decode(d, n+".cookieverf"); err != nil {
		return err
	}
	for i := 0; ; i++ {
		more, err := d.Optional()
		if err != nil {
			return field(fmt.Sprintf("%s.entries[%d]", n, i), err)
		}
		if !more {
			break
		}
		if len(r.Entries) < cap(r.Entries) {
			r.Entries = r.Entries[:len(r.Entries)+1]
		} else {
			r.Entries = append(r.Entries, Entry4{})
		}
		en := &r.Entries[len(r.Entries)-1]
		if en.Cookie, err = decodeU64(d, n+".entry.cookie"); err != nil {
			return err
		}
		if en.Name, err = decodeComponent(d, n+".entry.name"); err != nil {
			return err
		}
		if err = decodeFattr(d, &en.Mask, &en.Attrs, n+".entry.attrs"); err != nil {
			return err
		}
	}
	r.EOF, err = decodeBool(d, n+".eof")
	return err
}

// ReaddirEncoder writes a successful READDIR4res entry by entry, stopping where the
// call's counts say: the READDIR4resok (cookie verifier, entries, end of list and eof)
// stays within maxcount bytes, and the entries' directory information (cookie, name
// and their XDR framing) within dircount bytes when dircount is not zero.
//
// A server calls Begin, then Add for each entry until Add refuses one, then Finish. If
// not even the first entry fitted and the directory has more, or maxcount cannot hold
// even an empty READDIR4resok (Fits), the answer is NFS4ERR_TOOSMALL (RFC 8881
// §18.23.3): Abort replaces the result with that status.
type ReaddirEncoder struct {
	e        *xdr.Encoder
	start    int // logical position of the status word
	dircount uint32
	maxcount uint32
	used     uint32 // bytes of READDIR4resok so far, plus the 8 that end it
	dirUsed  uint32
	n        int
}

// Begin writes status NFS4_OK and the cookie verifier.
func (w *ReaddirEncoder) Begin(e *xdr.Encoder, verf Verifier, dircount, maxcount uint32) {
	w.e, w.dircount, w.maxcount, w.n = e, dircount, maxcount, 0
	w.start = e.Pos()
	e.Uint32(uint32(OK))
	e.FixedOpaque(verf[:])
	w.used, w.dirUsed = VerifierSize+8, 0
}

// Add appends an entry with the attributes in mask (within SupportedAttrs) and
// reports whether it fitted; an entry that did not fit is not written, and once one
// has been refused the caller stops adding.
func (w *ReaddirEncoder) Add(cookie uint64, name []byte, mask Bitmap4, a *Fattr) bool {
	pos := w.e.Pos()
	w.e.Optional(true)
	w.e.Uint64(cookie)
	w.e.Opaque(name)
	EncodeFattr(w.e, mask, a)
	size := uint32(w.e.Pos() - pos)
	dir := uint32(8 + xdr.OpaqueSize(len(name)))
	if w.used+size > w.maxcount || (w.dircount != 0 && w.dirUsed+dir > w.dircount && w.n > 0) {
		w.e.Truncate(pos)
		return false
	}
	w.used += size
	w.dirUsed += dir
	w.n++
	return true
}

// Fits reports whether the READDIR4resok, finished now, stays within maxcount. Add
// keeps every entry within it, so only a maxcount smaller than an empty READDIR4resok
// (16 bytes: cookie verifier, end of the entry list, eof) does not fit.
func (w *ReaddirEncoder) Fits() bool { return w.used <= w.maxcount }

// Len returns the number of entries written.
func (w *ReaddirEncoder) Len() int { return w.n }

// Finish ends the entry list and writes eof.
func (w *ReaddirEncoder) Finish(eof bool) {
	w.e.Optional(false)
	w.e.Bool(eof)
}

// Abort discards everything Begin and Add wrote and writes status alone (e.g.
// NFS4ERR_TOOSMALL when maxcount cannot hold one entry).
func (w *ReaddirEncoder) Abort(status Status) {
	w.e.Truncate(w.start)
	w.e.Uint32(uint32(status))
}

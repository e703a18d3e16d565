package nfs3

import (
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ReaddirArgs is READDIR3args. Count bounds the size of the whole READDIR3resok.
//
//	struct READDIR3args { nfs_fh3 dir; cookie3 cookie; cookieverf3 cookieverf; count3 count; };
type ReaddirArgs struct {
	Dir        FH
	Cookie     uint64
	CookieVerf [CookieVerfSize]byte
	Count      uint32
}

// EncodeXDR encodes READDIR3args.
func (a *ReaddirArgs) EncodeXDR(e *xdr.Encoder) {
	encodeFH(e, a.Dir)
	e.Uint64(a.Cookie)
	e.FixedOpaque(a.CookieVerf[:])
	e.Uint32(a.Count)
}

// DecodeXDR decodes READDIR3args.
func (a *ReaddirArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.Dir, err = decodeFH(d, "READDIR3args.dir"); err != nil {
		return err
	}
	if a.Cookie, err = decodeU64(d, "READDIR3args.cookie"); err != nil {
		return err
	}
	if err = decodeFixed8(d, &a.CookieVerf, "READDIR3args.cookieverf"); err != nil {
		return err
	}
	a.Count, err = decodeU32(d, "READDIR3args.count")
	return err
}

// DirEntry is entry3, one name in a READDIR reply. Name aliases the decoder's buffer.
//
//	struct entry3 { fileid3 fileid; filename3 name; cookie3 cookie; entry3 *nextentry; };
type DirEntry struct {
	FileID uint64
	Name   []byte
	Cookie uint64
}

// Size returns the entry's encoded size, including the value_follows word before it.
func (e *DirEntry) Size() int { return DirEntrySize(len(e.Name)) }

// DirEntrySize returns the encoded size of an entry3 with an n-byte name, including the
// value_follows word before it.
func DirEntrySize(n int) int { return 4 + 8 + xdr.OpaqueSize(n) + 8 }

// ReaddirResOverhead is the size of a READDIR3resok (or READDIRPLUS3resok) without
// entries, with directory attributes present: status, post_op_attr, cookieverf, the
// final value_follows word and eof.
const ReaddirResOverhead = 4 + 4 + FattrSize + CookieVerfSize + 4 + 4

// ReaddirRes is READDIR3res. The list is encoded from Entries in order.
//
//	struct READDIR3resok { post_op_attr dir_attributes; cookieverf3 cookieverf; dirlist3 reply; };
//	struct dirlist3 { entry3 *entries; bool eof; };
//	struct READDIR3resfail { post_op_attr dir_attributes; };
type ReaddirRes struct {
	Status     Status
	DirAttr    PostOpAttr
	CookieVerf [CookieVerfSize]byte // NFS3_OK only
	Entries    []DirEntry           // NFS3_OK only
	EOF        bool                 // NFS3_OK only
}

// EncodeXDR encodes READDIR3res.
func (r *ReaddirRes) EncodeXDR(e *xdr.Encoder) {
	if !encodeReaddirHead(e, r.Status, &r.DirAttr, &r.CookieVerf) {
		return
	}
	for i := range r.Entries {
		en := &r.Entries[i]
		encodeEntryHead(e, en.FileID, en.Name, en.Cookie)
	}
	e.Optional(false)
	e.Bool(r.EOF)
}

// DecodeXDR decodes READDIR3res, reusing the storage of Entries.
func (r *ReaddirRes) DecodeXDR(d *xdr.Decoder) error {
	r.Entries, r.EOF = r.Entries[:0], false
	f := &readdirFields
	if ok, err := decodeReaddirHead(d, f, &r.Status, &r.DirAttr, &r.CookieVerf); !ok || err != nil {
		return err
	}
	for {
		more, err := decodeBool(d, f.entries)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		var en DirEntry
		if err := decodeEntryHead(d, f, &en.FileID, &en.Name, &en.Cookie); err != nil {
			return err
		}
		r.Entries = append(r.Entries, en)
	}
	var err error
	r.EOF, err = decodeBool(d, f.eof)
	return err
}

// readdirNames are the field names the decode errors of READDIR3res or READDIRPLUS3res
// give.
type readdirNames struct {
	res, dirAttr, cookieVerf, entries, fileID, name, cookie, eof string
}

var (
	readdirFields = readdirNames{
		res: "READDIR3res", dirAttr: "READDIR3res.dir_attributes", cookieVerf: "READDIR3res.cookieverf",
		entries: "READDIR3res.reply.entries", fileID: "READDIR3res.entry3.fileid",
		name: "READDIR3res.entry3.name", cookie: "READDIR3res.entry3.cookie", eof: "READDIR3res.reply.eof",
	}
	readdirplusFields = readdirNames{
		res: "READDIRPLUS3res", dirAttr: "READDIRPLUS3res.dir_attributes", cookieVerf: "READDIRPLUS3res.cookieverf",
		entries: "READDIRPLUS3res.reply.entries", fileID: "READDIRPLUS3res.entryplus3.fileid",
		name: "READDIRPLUS3res.entryplus3.name", cookie: "READDIRPLUS3res.entryplus3.cookie", eof: "READDIRPLUS3res.reply.eof",
	}
)

// encodeReaddirHead encodes what READDIR3res and READDIRPLUS3res share before the
// entries: status, dir_attributes and, for NFS3_OK, cookieverf. It reports whether the
// entries follow (NFS3_OK).
func encodeReaddirHead(e *xdr.Encoder, status Status, dirAttr *PostOpAttr, verf *[CookieVerfSize]byte) bool {
	e.Uint32(uint32(status))
	dirAttr.EncodeXDR(e)
	if status != StatusOK {
		return false
	}
	e.FixedOpaque(verf[:])
	return true
}

// encodeEntryHead encodes the value_follows TRUE before an entry3 or entryplus3 and the
// fields they share: fileid, name and cookie.
func encodeEntryHead(e *xdr.Encoder, fileID uint64, name []byte, cookie uint64) {
	e.Optional(true)
	e.Uint64(fileID)
	e.Opaque(name)
	e.Uint64(cookie)
}

// decodeReaddirHead decodes what encodeReaddirHead encodes, clearing verf when the
// status is not NFS3_OK. It reports whether the entries follow.
func decodeReaddirHead(d *xdr.Decoder, f *readdirNames, status *Status, dirAttr *PostOpAttr, verf *[CookieVerfSize]byte) (ok bool, err error) {
	if *status, err = decodeStatus(d, f.res); err != nil {
		return false, err
	}
	if err = dirAttr.decode(d, f.dirAttr); err != nil {
		return false, err
	}
	*verf = [CookieVerfSize]byte{}
	if *status != StatusOK {
		return false, nil
	}
	if err = decodeFixed8(d, verf, f.cookieVerf); err != nil {
		return false, err
	}
	return true, nil
}

// decodeEntryHead decodes the fields entry3 and entryplus3 start with: fileid, name and
// cookie.
func decodeEntryHead(d *xdr.Decoder, f *readdirNames, fileID *uint64, name *[]byte, cookie *uint64) (err error) {
	if *fileID, err = decodeU64(d, f.fileID); err != nil {
		return err
	}
	if *name, err = decodeName(d, f.name); err != nil {
		return err
	}
	*cookie, err = decodeU64(d, f.cookie)
	return err
}

// ReaddirplusArgs is READDIRPLUS3args. DirCount bounds the directory information
// (fileid, name, cookie) in the reply, MaxCount the whole READDIRPLUS3resok.
//
//	struct READDIRPLUS3args { nfs_fh3 dir; cookie3 cookie; cookieverf3 cookieverf;
//	   count3 dircount; count3 maxcount; };
type ReaddirplusArgs struct {
	Dir        FH
	Cookie     uint64
	CookieVerf [CookieVerfSize]byte
	DirCount   uint32
	MaxCount   uint32
}

// EncodeXDR encodes READDIRPLUS3args.
func (a *ReaddirplusArgs) EncodeXDR(e *xdr.Encoder) {
	encodeFH(e, a.Dir)
	e.Uint64(a.Cookie)
	e.FixedOpaque(a.CookieVerf[:])
	e.Uint32(a.DirCount)
	e.Uint32(a.MaxCount)
}

// DecodeXDR decodes READDIRPLUS3args.
func (a *ReaddirplusArgs) DecodeXDR(d *xdr.Decoder) (err error) {
	if a.Dir, err = decodeFH(d, "READDIRPLUS3args.dir"); err != nil {
		return err
	}
	if a.Cookie, err = decodeU64(d, "READDIRPLUS3args.cookie"); err != nil {
		return err
	}
	if err = decodeFixed8(d, &a.CookieVerf, "READDIRPLUS3args.cookieverf"); err != nil {
		return err
	}
	if a.DirCount, err = decodeU32(d, "READDIRPLUS3args.dircount"); err != nil {
		return err
	}
	a.MaxCount, err = decodeU32(d, "READDIRPLUS3args.maxcount")
	return err
}

// DirEntryPlus is entryplus3, one name in a READDIRPLUS reply with its attributes and
// file handle. Name and Handle.FH alias the decoder's buffer.
//
//	struct entryplus3 { fileid3 fileid; filename3 name; cookie3 cookie;
//	   post_op_attr name_attributes; post_op_fh3 name_handle; entryplus3 *nextentry; };
type DirEntryPlus struct {
	FileID uint64
	Name   []byte
	Cookie uint64
	Attr   PostOpAttr
	Handle PostOpFH
}

// Size returns the entry's encoded size, including the value_follows word before it.
func (e *DirEntryPlus) Size() int {
	n := DirEntrySize(len(e.Name)) + 4 + 4
	if e.Attr.Present {
		n += FattrSize
	}
	if e.Handle.Present {
		n += xdr.OpaqueSize(len(e.Handle.FH))
	}
	return n
}

// ReaddirplusRes is READDIRPLUS3res.
//
//	struct READDIRPLUS3resok { post_op_attr dir_attributes; cookieverf3 cookieverf; dirlistplus3 reply; };
//	struct dirlistplus3 { entryplus3 *entries; bool eof; };
//	struct READDIRPLUS3resfail { post_op_attr dir_attributes; };
type ReaddirplusRes struct {
	Status     Status
	DirAttr    PostOpAttr
	CookieVerf [CookieVerfSize]byte // NFS3_OK only
	Entries    []DirEntryPlus       // NFS3_OK only
	EOF        bool                 // NFS3_OK only
}

// EncodeXDR encodes READDIRPLUS3res.
func (r *ReaddirplusRes) EncodeXDR(e *xdr.Encoder) {
	if !encodeReaddirHead(e, r.Status, &r.DirAttr, &r.CookieVerf) {
		return
	}
	for i := range r.Entries {
		en := &r.Entries[i]
		encodeEntryHead(e, en.FileID, en.Name, en.Cookie)
		en.Attr.EncodeXDR(e)
		en.Handle.encode(e)
	}
	e.Optional(false)
	e.Bool(r.EOF)
}

// DecodeXDR decodes READDIRPLUS3res, reusing the storage of Entries.
func (r *ReaddirplusRes) DecodeXDR(d *xdr.Decoder) error {
	r.Entries, r.EOF = r.Entries[:0], false
	f := &readdirplusFields
	if ok, err := decodeReaddirHead(d, f, &r.Status, &r.DirAttr, &r.CookieVerf); !ok || err != nil {
		return err
	}
	for {
		more, err := decodeBool(d, f.entries)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		r.Entries = append(r.Entries, DirEntryPlus{})
		en := &r.Entries[len(r.Entries)-1]
		if err = decodeEntryHead(d, f, &en.FileID, &en.Name, &en.Cookie); err != nil {
			return err
		}
		if err = en.Attr.decode(d, "READDIRPLUS3res.entryplus3.name_attributes"); err != nil {
			return err
		}
		if err = en.Handle.decode(d, "READDIRPLUS3res.entryplus3.name_handle"); err != nil {
			return err
		}
	}
	var err error
	r.EOF, err = decodeBool(d, f.eof)
	return err
}

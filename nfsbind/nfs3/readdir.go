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
	e.Uint32(uint32(r.Status))
	r.DirAttr.EncodeXDR(e)
	if r.Status != StatusOK {
		return
	}
	e.FixedOpaque(r.CookieVerf[:])
	for i := range r.Entries {
		en := &r.Entries[i]
		e.Optional(true)
		e.Uint64(en.FileID)
		e.Opaque(en.Name)
		e.Uint64(en.Cookie)
	}
	e.Optional(false)
	e.Bool(r.EOF)
}

// DecodeXDR decodes READDIR3res, reusing the storage of Entries.
func (r *ReaddirRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "READDIR3res"); err != nil {
		return err
	}
	if err = r.DirAttr.decode(d, "READDIR3res.dir_attributes"); err != nil {
		return err
	}
	r.CookieVerf, r.Entries, r.EOF = [CookieVerfSize]byte{}, r.Entries[:0], false
	if r.Status != StatusOK {
		return nil
	}
	if err = decodeFixed8(d, &r.CookieVerf, "READDIR3res.cookieverf"); err != nil {
		return err
	}
	for {
		more, err := decodeBool(d, "READDIR3res.reply.entries")
		if err != nil {
			return err
		}
		if !more {
			break
		}
		var en DirEntry
		if en.FileID, err = decodeU64(d, "READDIR3res.entry3.fileid"); err != nil {
			return err
		}
		if en.Name, err = decodeName(d, "READDIR3res.entry3.name"); err != nil {
			return err
		}
		if en.Cookie, err = decodeU64(d, "READDIR3res.entry3.cookie"); err != nil {
			return err
		}
		r.Entries = append(r.Entries, en)
	}
	r.EOF, err = decodeBool(d, "READDIR3res.reply.eof")
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
	e.Uint32(uint32(r.Status))
	r.DirAttr.EncodeXDR(e)
	if r.Status != StatusOK {
		return
	}
	e.FixedOpaque(r.CookieVerf[:])
	for i := range r.Entries {
		en := &r.Entries[i]
		e.Optional(true)
		e.Uint64(en.FileID)
		e.Opaque(en.Name)
		e.Uint64(en.Cookie)
		en.Attr.EncodeXDR(e)
		en.Handle.encode(e)
	}
	e.Optional(false)
	e.Bool(r.EOF)
}

// DecodeXDR decodes READDIRPLUS3res, reusing the storage of Entries.
func (r *ReaddirplusRes) DecodeXDR(d *xdr.Decoder) (err error) {
	if r.Status, err = decodeStatus(d, "READDIRPLUS3res"); err != nil {
		return err
	}
	if err = r.DirAttr.decode(d, "READDIRPLUS3res.dir_attributes"); err != nil {
		return err
	}
	r.CookieVerf, r.Entries, r.EOF = [CookieVerfSize]byte{}, r.Entries[:0], false
	if r.Status != StatusOK {
		return nil
	}
	if err = decodeFixed8(d, &r.CookieVerf, "READDIRPLUS3res.cookieverf"); err != nil {
		return err
	}
	for {
		more, err := decodeBool(d, "READDIRPLUS3res.reply.entries")
		if err != nil {
			return err
		}
		if !more {
			break
		}
		r.Entries = append(r.Entries, DirEntryPlus{})
		en := &r.Entries[len(r.Entries)-1]
		if en.FileID, err = decodeU64(d, "READDIRPLUS3res.entryplus3.fileid"); err != nil {
			return err
		}
		if en.Name, err = decodeName(d, "READDIRPLUS3res.entryplus3.name"); err != nil {
			return err
		}
		if en.Cookie, err = decodeU64(d, "READDIRPLUS3res.entryplus3.cookie"); err != nil {
			return err
		}
		if err = en.Attr.decode(d, "READDIRPLUS3res.entryplus3.name_attributes"); err != nil {
			return err
		}
		if err = en.Handle.decode(d, "READDIRPLUS3res.entryplus3.name_handle"); err != nil {
			return err
		}
	}
	r.EOF, err = decodeBool(d, "READDIRPLUS3res.reply.eof")
	return err
}

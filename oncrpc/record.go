package oncrpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Record marking (RFC 5531 §11): on a byte stream each RPC message is a record sent as
// one or more fragments. A fragment is a 4-byte header and data:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-------------------------------------------------------------+
//	|L|                 fragment length (31 bits)                   |
//	+-+-------------------------------------------------------------+
//	|                 fragment data (length bytes) ...
//
// L is set on the last fragment of a record. Fragments of length 0 are legal.

const (
	lastFragment = 1 << 31
	// MaxFragmentSize is the largest length a fragment header can carry.
	MaxFragmentSize = 1<<31 - 1
	// DefaultMaxRecord is the default bound on a received record.
	DefaultMaxRecord = 4 << 20
	// readStep bounds how far a record buffer grows ahead of the bytes that have
	// actually arrived, so a claimed length costs nothing until it is backed by data.
	readStep = 64 << 10
)

// A RecordTooLargeError reports a record whose fragments claim more than the
// configured maximum. Nothing of the claimed size was allocated; the connection must be
// closed, since the stream cannot be resynchronized.
type RecordTooLargeError struct {
	Claimed int64 // bytes of the record so far, including the offending fragment
	Limit   int
	// Header is the offending fragment header as it arrived. When it is text, the
	// peer most likely speaks another protocol ("MPA " from an iWARP port, "HTTP",
	// "SSH-"), and Error says so.
	Header [4]byte
}

func (e *RecordTooLargeError) Error() string {
	msg := fmt.Sprintf("oncrpc: record marking: record of at least %d bytes exceeds limit %d", e.Claimed, e.Limit)
	for _, c := range e.Header {
		if c < ' ' || c > '~' {
			return msg
		}
	}
	return fmt.Sprintf("%s (fragment header %q: is the peer speaking ONC RPC?)", msg, e.Header[:])
}

// ErrRecordTruncated means the stream ended inside a record.
var ErrRecordTruncated = errors.New("oncrpc: record marking: stream ended inside a record")

// A RecordReader reads record-marked records from a byte stream.
type RecordReader struct {
	r   io.Reader
	max int
	hdr [4]byte
}

// NewRecordReader returns a reader of records of at most maxRecord bytes
// (0: DefaultMaxRecord) from r. r should be buffered.
func NewRecordReader(r io.Reader, maxRecord int) *RecordReader {
	if maxRecord <= 0 {
		maxRecord = DefaultMaxRecord
	}
	return &RecordReader{r: r, max: maxRecord}
}

// ReadRecord reads the next record and appends it to dst. It returns io.EOF if the
// stream ends between records, an error wrapping ErrRecordTruncated if it ends inside
// one, and a *RecordTooLargeError for a record over the limit.
func (rr *RecordReader) ReadRecord(dst []byte) ([]byte, error) {
	start := len(dst)
	for first := true; ; first = false {
		if _, err := io.ReadFull(rr.r, rr.hdr[:]); err != nil {
			if first && err == io.EOF {
				return dst, io.EOF
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return dst, fmt.Errorf("%w (in a fragment header)", ErrRecordTruncated)
			}
			return dst, fmt.Errorf("oncrpc: record marking: reading fragment header: %w", err)
		}
		h := binary.BigEndian.Uint32(rr.hdr[:])
		n := int(h &^ lastFragment)
		if total := int64(len(dst)-start) + int64(n); total > int64(rr.max) {
			return dst, &RecordTooLargeError{Claimed: total, Limit: rr.max, Header: rr.hdr}
		}
		for n > 0 {
			if cap(dst)-len(dst) == 0 {
				dst = slices.Grow(dst, min(n, readStep))
			}
			k := min(n, cap(dst)-len(dst))
			m, err := io.ReadFull(rr.r, dst[len(dst):len(dst)+k])
			dst = dst[:len(dst)+m]
			if err != nil {
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					return dst, fmt.Errorf("%w (%d bytes of a fragment missing)", ErrRecordTruncated, n-m)
				}
				return dst, fmt.Errorf("oncrpc: record marking: reading fragment: %w", err)
			}
			n -= k
		}
		if h&lastFragment != 0 {
			return dst, nil
		}
	}
}

// recordVecs builds the vectored write of one record: the fragments of m, whose
// logical stream is inline[:p] + data + pad + inline[p:] for each payload, split into
// fragments of at most maxFrag bytes. hdrs provides storage for the fragment headers.
// Payload data is referenced, never copied.
type recordVecs struct {
	iov     [][]byte
	hdrs    []byte
	maxFrag int
	room    int // bytes left in the current fragment
	left    int // bytes left in the record
	frag    int // fragments started
}

var padZeros [xdr.Unit]byte

func (v *recordVecs) build(m *Message) {
	total := m.Len()
	maxFrag := v.maxFrag
	if maxFrag <= 0 || maxFrag > MaxFragmentSize {
		maxFrag = MaxFragmentSize
	}
	nfrag := max(1, (total+maxFrag-1)/maxFrag)
	v.hdrs = slices.Grow(v.hdrs[:0], 4*nfrag)[:4*nfrag]
	clear(v.iov)
	v.iov = v.iov[:0]
	v.room, v.left, v.frag = 0, total, 0
	if total == 0 {
		v.startFragment(maxFrag)
		return
	}
	elided, prev := 0, 0
	for _, p := range m.Payloads {
		at := p.Pos - elided
		v.add(m.Inline[prev:at], maxFrag)
		v.add(p.Data, maxFrag)
		v.add(padZeros[:xdr.PadLen(len(p.Data))], maxFrag)
		elided += xdr.RoundUp(len(p.Data))
		prev = at
	}
	v.add(m.Inline[prev:], maxFrag)
}

func (v *recordVecs) startFragment(maxFrag int) {
	i := v.frag
	v.frag++
	size := min(v.left, maxFrag)
	h := uint32(size)
	if size == v.left {
		h |= lastFragment
	}
	hb := v.hdrs[4*i : 4*i+4 : 4*i+4]
	binary.BigEndian.PutUint32(hb, h)
	v.iov = append(v.iov, hb)
	v.room = size
}

func (v *recordVecs) add(b []byte, maxFrag int) {
	for len(b) > 0 {
		if v.room == 0 {
			v.startFragment(maxFrag)
		}
		k := min(v.room, len(b))
		v.iov = append(v.iov, b[:k])
		b = b[k:]
		v.room -= k
		v.left -= k
	}
}

package rpcrdma

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// RFC 8797 §7 connection private data ("RPC-over-RDMA CM private data"), 8 bytes, sent by
// both peers in the connection request and its accept:
//
//	0  4  magic     0xf6ab0e18
//	4  1  version   1
//	5  1  flags     bit 0: the sender accepts Send With Invalidate
//	6  1  send size (size>>10) - 1: the largest message the sender will send
//	7  1  recv size (size>>10) - 1: the receive buffers the sender posts
//
// Sizes are multiples of 1 KiB from 1024 to 262144. A peer that sends no private data (or
// data that is not this format) is assumed to use the RFC 8166 default inline size, 1024
// bytes both ways.

// Private data constants.
const (
	PrivateMagic      = 0xf6ab0e18 // cp_magic
	PrivateVersion    = 1          // cp_version
	PrivateSize       = 8          // encoded length
	FlagSendInvOK     = 1 << 0     // the sender can receive Send With Invalidate
	DefaultInlineSize = 1024       // RFC 8166 §3.3.2 default inline threshold
	MinInlineSize     = 1024       // smallest encodable size
	MaxInlineSize     = 256 << 10  // largest encodable size
)

// Private data decode errors; test with errors.Is.
var (
	// ErrPrivateShort: fewer than 8 bytes.
	ErrPrivateShort = errors.New("private data shorter than 8 bytes")
	// ErrPrivateMagic: the first word is not 0xf6ab0e18.
	ErrPrivateMagic = errors.New("private data magic is not 0xf6ab0e18")
	// ErrPrivateVersion: the version byte is not 1.
	ErrPrivateVersion = errors.New("private data version is not 1")
	// ErrPrivateTruncated: the data starts with the RFC 8797 magic but ends
	// before the 8 bytes the format has (IANA's RDMA-CM Private Data
	// Identifiers registry gives 0xf6ab0e18 a length of 8). Unlike data of
	// another format, or none, this is not something to fall back from: a
	// listener refuses the connection (Listener.Accept). It comes wrapped
	// together with ErrPrivateShort.
	ErrPrivateTruncated = errors.New("private data has the RFC 8797 magic but is truncated")
)

// ConnPrivate is the RFC 8797 connection private data.
type ConnPrivate struct {
	// SendInvOK: the sender accepts Send With Invalidate (flags bit 0).
	SendInvOK bool
	// Flags holds the flag bits other than bit 0 as received; ignored on encode.
	Flags uint8
	// SendSize is the largest RPC-over-RDMA message the sender will send, in bytes.
	SendSize int
	// RecvSize is the size of the sender's receive buffers, in bytes.
	RecvSize int
}

// encodeSize encodes a size in 1 KiB units minus one, clamping to the encodable range and
// rounding down to a multiple of 1 KiB (announcing less than we have is always safe).
func encodeSize(n int) byte {
	return byte(clampInline(n, MaxInlineSize)>>10 - 1)
}

// clampInline limits an inline threshold to [MinInlineSize, limit].
func clampInline(n, limit int) int { return max(MinInlineSize, min(n, limit)) }

// inlineOption is the value of a ClientOptions or ServerOptions inline threshold: n,
// or def when not set (zero or negative), clamped to the sizes the private data can
// announce.
func inlineOption(n, def int) int {
	if n <= 0 {
		n = def
	}
	return clampInline(n, MaxInlineSize)
}

// checkInlineLimit validates an inline field of a SetLimits argument: zero (no change)
// or within [MinInlineSize, limit], the registered buffer size.
func checkInlineLimit(field string, n, limit int) error {
	if n != 0 && (n < MinInlineSize || n > limit) {
		return fmt.Errorf("rpcrdma: SetLimits: %s %d outside [%d, %d]", field, n, MinInlineSize, limit)
	}
	return nil
}

func decodeSize(b byte) int { return (int(b) + 1) << 10 }

// Append appends the 8-byte encoding of p to b. Sizes outside 1024..262144 are clamped
// and others rounded down to a multiple of 1024.
func (p ConnPrivate) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, PrivateMagic)
	var flags byte
	if p.SendInvOK {
		flags |= FlagSendInvOK
	}
	return append(b, PrivateVersion, flags, encodeSize(p.SendSize), encodeSize(p.RecvSize))
}

// Decode decodes RFC 8797 private data from the start of b. Bytes after the first 8 are
// ignored (a future version may append fields). It returns an error wrapping
// ErrPrivateShort, ErrPrivateMagic or ErrPrivateVersion; callers then fall back to
// DefaultPrivate, except after ErrPrivateTruncated (magic present, fewer than 8 bytes),
// which a listener answers with a Reject.
func (p *ConnPrivate) Decode(b []byte) error {
	if len(b) < PrivateSize {
		if len(b) >= 4 && binary.BigEndian.Uint32(b) == PrivateMagic {
			return fmt.Errorf("rpcrdma: connection private data (%d bytes): %w: %w", len(b), ErrPrivateTruncated, ErrPrivateShort)
		}
		return fmt.Errorf("rpcrdma: connection private data (%d bytes): %w", len(b), ErrPrivateShort)
	}
	if m := binary.BigEndian.Uint32(b); m != PrivateMagic {
		return fmt.Errorf("rpcrdma: connection private data magic %#08x: %w", m, ErrPrivateMagic)
	}
	if b[4] != PrivateVersion {
		return fmt.Errorf("rpcrdma: connection private data version %d: %w", b[4], ErrPrivateVersion)
	}
	*p = ConnPrivate{
		SendInvOK: b[5]&FlagSendInvOK != 0,
		Flags:     b[5] &^ FlagSendInvOK,
		SendSize:  decodeSize(b[6]),
		RecvSize:  decodeSize(b[7]),
	}
	return nil
}

// DefaultPrivate is what a peer that sent no usable private data is assumed to have
// announced: 1024-byte inline sizes both ways, no Send With Invalidate.
var DefaultPrivate = ConnPrivate{SendSize: DefaultInlineSize, RecvSize: DefaultInlineSize}

// PeerPrivate decodes the peer's private data, returning DefaultPrivate and the decode
// error when it is absent or not RFC 8797 data.
func PeerPrivate(b []byte) (ConnPrivate, error) {
	var p ConnPrivate
	if err := p.Decode(b); err != nil {
		return DefaultPrivate, err
	}
	return p, nil
}

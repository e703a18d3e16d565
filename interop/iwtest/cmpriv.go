package iwtest

import (
	"encoding/binary"
	"fmt"
)

// ConnectPrivateMagic is the first word of the RPC-over-RDMA connection
// private data (RFC 8797 §7.1, Linux rpcrdma_cmp_magic).
const ConnectPrivateMagic = 0xf6ab0e18

// ConnectPrivateLen is the length of the RFC 8797 private data block.
const ConnectPrivateLen = 8

// FlagSendWithInvalidateOK is the RFC 8797 flag "the sender can accept
// Send With Invalidate".
const FlagSendWithInvalidateOK = 0x01

// ConnectPrivate is the RPC-over-RDMA connection private data (RFC 8797 §7.1):
// what a peer says in its MPA Request or Reply about inline sizes.
type ConnectPrivate struct {
	Version  uint8 // 1
	Flags    uint8 // FlagSendWithInvalidateOK
	SendSize int   // largest inline message the sender sends, in bytes
	RecvSize int   // largest inline message the sender can receive, in bytes
}

// ParseConnectPrivate decodes the first 8 bytes of ULP private data (after
// the MPA enhanced IRD/ORD block). Errors are *HeaderError.
func ParseConnectPrivate(pd []byte) (ConnectPrivate, error) {
	var c ConnectPrivate
	if len(pd) < ConnectPrivateLen {
		return c, bad("cm_private.length", uint64(len(pd)), fmt.Sprintf(">= %d", ConnectPrivateLen))
	}
	if m := binary.BigEndian.Uint32(pd); m != ConnectPrivateMagic {
		return c, bad("cm_private.magic", uint64(m), fmt.Sprintf("%#x", ConnectPrivateMagic))
	}
	c.Version, c.Flags = pd[4], pd[5]
	if c.Version != 1 {
		return c, bad("cm_private.version", uint64(c.Version), "1")
	}
	// sizes are encoded as (size/1024)-1 (RFC 8797 §7.1)
	c.SendSize = (int(pd[6]) + 1) << 10
	c.RecvSize = (int(pd[7]) + 1) << 10
	return c, nil
}

// AppendConnectPrivate appends the 8-byte block for c to dst. Sizes are
// rounded down to a multiple of 1024 and clamped to 1 KiB..256 KiB.
func AppendConnectPrivate(dst []byte, c ConnectPrivate) []byte {
	enc := func(n int) byte { return byte(min(max(n>>10, 1), 256) - 1) }
	dst = binary.BigEndian.AppendUint32(dst, ConnectPrivateMagic)
	return append(dst, c.Version, c.Flags, enc(c.SendSize), enc(c.RecvSize))
}

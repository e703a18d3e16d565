//go:build linux

package nfsserver

import (
	"hash/crc32"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func encodeMsg(m xdr.EncoderTo) []byte {
	var e xdr.Encoder
	m.EncodeXDR(&e)
	return xdr.Flatten(nil, e.Bytes(), e.Payloads())
}

// rawArgs sends its bytes as the procedure's arguments.
type rawArgs []byte

func (r rawArgs) EncodeXDR(e *xdr.Encoder) { e.FixedOpaque(r) }

var _ nfs3.Message = (*nfs3.ReadRes)(nil)

func unixTS(sec int64) unix.StatxTimestamp { return unix.StatxTimestamp{Sec: sec} }

func unixTSNow() unix.StatxTimestamp { return unix.StatxTimestamp{Sec: time.Now().Unix()} }

func statWithTimes(m, c int64) unix.Statx_t {
	return unix.Statx_t{Mtime: unixTS(m), Ctime: unixTS(c)}
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

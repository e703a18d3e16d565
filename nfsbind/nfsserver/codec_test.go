//go:build linux

package nfsserver

import (
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

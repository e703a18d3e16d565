package nfsclient

import (
	"crypto/rand"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

func newVerf() [nfs3.CreateVerfSize]byte {
	var v [nfs3.CreateVerfSize]byte
	rand.Read(v[:])
	return v
}

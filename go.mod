module github.com/go-rpcrdma/rpcrdma

go 1.24

require github.com/davecgh/go-xdr v0.0.0-20161123171359-e6a2ba005892 // indirect

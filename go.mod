module github.com/go-rpcrdma/rpcrdma

go 1.26.0

require (
	github.com/davecgh/go-xdr v0.0.0-20161123171359-e6a2ba005892
	github.com/hashicorp/go-hclog v1.6.3
	golang.org/x/sys v0.49.0
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
)

//go:build linux

package main

import (
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// explain adds to an error what a user can do about it, where the NFS status alone
// says little.
func explain(err error) error {
	if errors.Is(err, nfs3.StatusStale) {
		return fmt.Errorf("%w (stale file handle: the file or directory was removed on the server, "+
			"or the server restarted with a new handle key, as without its state directory; run the command again)", err)
	}
	return err
}

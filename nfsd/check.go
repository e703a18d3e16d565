//go:build linux

package nfsd

import (
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
)

// CheckExports checks cfg's exports (Export, or ExportsFile) as Run does when it
// starts and as a reload does, without serving them and without touching
// cfg.StateDir: the file parses, every directory exists and opens, and no two
// exports share an fsid. It returns one line per export, as the start-up summary
// lists them ("DIR as PATH to CLIENT(OPTIONS) ..."). Listener addresses and the
// other fields are not looked at.
func CheckExports(cfg Config) ([]string, error) {
	if err := cfg.validateExports(); err != nil {
		return nil, err
	}
	t, err := cfg.exportsTable()
	if err != nil {
		return nil, err
	}
	// The table is loaded into a server of its own, under a throwaway handle key,
	// so that everything a reload checks is checked.
	x, err := nfsserver.NewExports(nfsserver.Options{MaxIO: cfg.MaxIO}, t, defaultResolver)
	if err != nil {
		return nil, err
	}
	if err := x.Close(); err != nil {
		return nil, err
	}
	return describeExports(t), nil
}

package nfs4state

import "os"

// syncDir makes the entries of directory dir stable: fsync of the directory, so that
// a rename into it survives a crash. A variable, so that tests can see it called and
// make it fail.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

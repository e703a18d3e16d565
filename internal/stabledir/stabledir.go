// Package stabledir makes directories whose creation survives a crash.
package stabledir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// SyncDir makes the entries of directory dir stable: an fsync of the directory, so
// that what was created, renamed or removed in it survives a crash.
func SyncDir(dir string) error {
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

// MkdirAll makes the directory dir with the parents it lacks, as os.MkdirAll does
// (each with perm), and has each it made stable: a new directory's entry is in its
// parent, whose fsync (syncDir) makes it survive a crash. A directory that exists is
// left as it is, unsynced.
func MkdirAll(dir string, perm fs.FileMode, syncDir func(string) error) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm, syncDir); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil {
		if fi, serr := os.Lstat(dir); errors.Is(err, fs.ErrExist) && serr == nil && fi.IsDir() {
			return nil // made meanwhile by another: its maker syncs it
		}
		return err
	}
	return syncDir(parent)
}

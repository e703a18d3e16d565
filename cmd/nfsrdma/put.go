//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
)

// cleanupTimeout bounds removing a temporary file after a failed or interrupted put,
// which runs after the command's context has ended.
const cleanupTimeout = 10 * time.Second

func runPut(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	mode := octal(0)
	qd := 4
	ctx, cancel, f, pos, err := startCommand(ctx, "put", args, 2, stderr, func(fs *flagSet) {
		fs.Var(&mode, "mode", "permission `bits` of the file, octal (0: an existing target's, else the local file's)")
		fs.IntVar(&qd, "qd", qd, "WRITEs in flight")
	})
	if err != nil {
		return err
	}
	defer cancel()
	if qd < 1 || qd > maxBenchQD {
		return fmt.Errorf("-qd %d: want 1 to %d", qd, maxBenchQD)
	}
	local := pos[0]
	r, err := parseRemote(pos[1])
	if err != nil {
		return err
	}
	file, err := os.Open(local)
	if err != nil {
		return err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", local)
	}
	s, err := mount(ctx, f, f.proto, r)
	if err != nil {
		return err
	}
	defer s.Close()

	t, err := s.putTarget(ctx, r, path.Base(local))
	if err != nil {
		return err
	}
	switch {
	case mode != 0:
	case t.exists:
		mode = octal(t.attr.Mode & 0o7777)
	default:
		mode = octal(fi.Mode().Perm())
	}
	start := time.Now()
	prog := startProgress(stderr, "put "+path.Base(local), fi.Size(), 500*time.Millisecond, false)
	err = putFile(ctx, s.c, t.dir, t.name, uint32(mode), file, fi.Size(), qd, prog.add)
	prog.end()
	full := remote{host: r.host, path: path.Join(s.export, t.dirRel, t.name)}
	if err != nil {
		return fmt.Errorf("%v: %w", full, err)
	}
	el := time.Since(start)
	fmt.Fprintf(stdout, "put %s -> %v: %d bytes in %v (%s over %s)\n", local, full, fi.Size(), el.Round(time.Microsecond), rate(fi.Size(), el), s.proto)
	return nil
}

// putTarget is where put writes: name in the directory dir.
type putTarget struct {
	dir    nfs3.FH
	dirRel string // dir's path inside the export
	name   string
	exists bool       // name is an existing regular file, to be replaced
	attr   nfs3.Fattr // its attributes when it exists
}

// putTarget resolves put's destination as cp does: a path ending in "/" must be an
// existing directory, which receives localName; an existing directory receives
// localName too; anything else names the file, in a directory that must exist.
func (s *session) putTarget(ctx context.Context, r remote, localName string) (putTarget, error) {
	fh, attr, err := s.lookup(ctx, s.rel)
	switch {
	case err == nil && attr.Type == nfs3.TypeDir:
		return s.entryIn(ctx, fh, s.rel, localName)
	case r.dir && err == nil:
		return putTarget{}, fmt.Errorf("%s: not a directory", r)
	case r.dir && isNotExist(err):
		return putTarget{}, fmt.Errorf("%s: no such directory", r)
	case err != nil && !isNotExist(err):
		return putTarget{}, err
	}
	// A file, or nothing yet: the path names the file.
	if s.rel == "" {
		return putTarget{}, fmt.Errorf("%s: the export root is not a directory", r)
	}
	dirRel := parentRel(s.rel)
	dfh, dattr, err := s.lookup(ctx, dirRel)
	if err != nil {
		return putTarget{}, err
	}
	if dattr.Type != nfs3.TypeDir {
		return putTarget{}, fmt.Errorf("%v: not a directory", remote{host: r.host, path: path.Join(s.export, dirRel)})
	}
	return s.entryIn(ctx, dfh, dirRel, path.Base(s.rel))
}

// entryIn is the target name in directory dir, which may exist only as a regular
// file.
func (s *session) entryIn(ctx context.Context, dir nfs3.FH, dirRel, name string) (putTarget, error) {
	t := putTarget{dir: dir, dirRel: dirRel, name: name}
	_, attr, err := s.c.Lookup(ctx, dir, name)
	switch {
	case err == nil && attr.Type != nfs3.TypeReg:
		return t, fmt.Errorf("%s: exists and is a %v, not a regular file", path.Join(s.export, dirRel, name), attr.Type)
	case err == nil:
		t.exists, t.attr = true, attr
	case !isNotExist(err):
		return t, fmt.Errorf("%s: %w", path.Join(s.export, dirRel, name), err)
	}
	return t, nil
}

// tempName is a fresh name for put's temporary file beside name:
// .NAME.nfsrdma-XXXXXX, cut so that it stays within NFS's usual 255-byte name limit.
func tempName(name string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [6]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	if len(name) > 200 {
		name = name[:200]
	}
	return "." + name + ".nfsrdma-" + string(b[:])
}

// putFile writes the size bytes of src to name in dir without ever exposing a partial
// file under name: it creates a temporary file beside it (EXCLUSIVE, so a
// retransmitted CREATE is harmless; GUARDED where EXCLUSIVE is not supported), writes and commits the data there, and renames
// it over name. On any failure, an interrupt included, it removes the temporary file
// (with a fresh context, since ctx may be the one that ended) and name is untouched.
func putFile(ctx context.Context, c *nfsclient.Client, dir nfs3.FH, name string, mode uint32, src io.ReaderAt, size int64, qd int, moved func(int)) (err error) {
	var tmp string
	var fh nfs3.FH
	for try := 0; ; try++ {
		tmp = tempName(name)
		fh, _, err = c.Create(ctx, dir, tmp, mode, true)
		if errors.Is(err, nfs3.StatusNotSupp) {
			// A server without EXCLUSIVE create (willscott/go-nfs): GUARDED.
			fh, _, err = c.Create(ctx, dir, tmp, mode, false)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, nfs3.StatusExist) || try == 3 {
			return fmt.Errorf("creating the temporary file %s: %w", tmp, err)
		}
	}
	defer func() {
		if err == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rerr := c.Remove(cctx, dir, tmp); rerr != nil && !errors.Is(rerr, nfs3.StatusNoEnt) {
			err = fmt.Errorf("%w (and the temporary file %s remains: %v)", err, tmp, rerr)
		}
	}()
	if err := writeFile(ctx, c, fh, src, size, qd, moved); err != nil {
		return err
	}
	if err := c.Rename(ctx, dir, tmp, dir, name); err != nil {
		return fmt.Errorf("renaming %s over it: %w", tmp, err)
	}
	return nil
}

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
	"strings"
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
		fs.Var(&mode, "mode", "permission `bits` of the file, octal (0: an existing target's, else the local file's; 0644 for standard input)")
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
	// A file is written from its offsets, qd WRITEs at a time; standard input ("-")
	// as a stream (writeStream), to a path that must name the file.
	var file *os.File
	size, perm, name := int64(-1), os.FileMode(0o644), ""
	if local != "-" {
		if file, err = os.Open(local); err != nil {
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
		size, perm, name = fi.Size(), fi.Mode().Perm(), path.Base(local)
	}
	s, err := mount(ctx, f, f.proto, r)
	if err != nil {
		return err
	}
	defer s.Close()

	t, err := s.putTarget(ctx, r, name)
	if err != nil {
		return err
	}
	switch {
	case mode != 0:
	case t.exists:
		mode = octal(t.attr.Mode & 0o7777)
	default:
		mode = octal(perm)
	}
	start := time.Now()
	prog := startProgress(stderr, "put "+path.Base(t.name), size, 500*time.Millisecond, false)
	err = putFile(ctx, s.c, t.dir, t.name, uint32(mode), func(ctx context.Context, fh nfs3.FH) error {
		if file != nil {
			return writeFile(ctx, s.c, fh, file, 0, size, qd, prog.add)
		}
		size, err = writeStream(ctx, s.c, fh, stdin, qd, prog.add)
		return err
	})
	prog.end()
	full := remote{host: r.host, path: path.Join(s.export, t.dirRel, t.name)}
	if err != nil {
		return fmt.Errorf("%v: %w", full, err)
	}
	el := time.Since(start)
	fmt.Fprintf(stdout, "put %s -> %v: %d bytes in %v (%s over %s)\n", local, full, size, el.Round(time.Microsecond), rate(size, el), s.proto)
	return nil
}

// stdin is what put - reads (tests give their own).
var stdin io.Reader = os.Stdin

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
// localName too; anything else names the file, in a directory that must exist. With
// no localName (standard input) the path must name the file.
func (s *session) putTarget(ctx context.Context, r remote, localName string) (putTarget, error) {
	fh, attr, err := s.lookup(ctx, s.rel)
	switch {
	case localName == "" && (r.dir || err == nil && attr.Type == nfs3.TypeDir):
		return putTarget{}, fmt.Errorf("%s: a directory; name the file that standard input goes to (%s/NAME)", r, strings.TrimSuffix(r.String(), "/"))
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
		return t, fmt.Errorf("%s: exists and is %s (%v), not a regular file", path.Join(s.export, dirRel, name), typeName(attr.Type), attr.Type)
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

// putFile makes name in dir the file write writes, without ever exposing a partial
// file under name: it creates a temporary file beside it (EXCLUSIVE, so a
// retransmitted CREATE is harmless; GUARDED where EXCLUSIVE is not supported), has
// write write and commit the data there (writeFile, writeStream), and renames it over
// name. On any failure, an interrupt included, it removes the temporary file (with a
// fresh context, since ctx may be the one that ended) and name is untouched.
func putFile(ctx context.Context, c *nfsclient.Client, dir nfs3.FH, name string, mode uint32, write func(ctx context.Context, fh nfs3.FH) error) (err error) {
	var tmp string
	var fh nfs3.FH
	// remove removes tmp after err, with a fresh context since ctx may be the one
	// that ended, and returns err, saying so if tmp remains.
	remove := func(err error) error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rerr := c.Remove(cctx, dir, tmp); rerr != nil && !errors.Is(rerr, nfs3.StatusNoEnt) {
			return fmt.Errorf("%w (and the temporary file %s remains: %v)", err, tmp, rerr)
		}
		return err
	}
	for try := 0; ; try++ {
		tmp = tempName(name)
		fh, _, err = c.Create(ctx, dir, tmp, mode, true)
		if errors.Is(err, nfs3.StatusNotSupp) && fh == nil {
			// A server without EXCLUSIVE create (willscott/go-nfs): GUARDED.
			fh, _, err = c.Create(ctx, dir, tmp, mode, false)
		}
		if err == nil {
			break
		}
		err = fmt.Errorf("creating the temporary file %s: %w", tmp, err)
		if fh != nil {
			// Created, but the SETATTR that finishes an EXCLUSIVE create failed.
			return remove(err)
		}
		if !errors.Is(err, nfs3.StatusExist) || try == 3 {
			return err
		}
	}
	defer func() {
		if err != nil {
			err = remove(err)
		}
	}()
	if err := write(ctx, fh); err != nil {
		return err
	}
	if err := c.Rename(ctx, dir, tmp, dir, name); err != nil {
		return fmt.Errorf("renaming %s over it: %w", tmp, err)
	}
	return nil
}

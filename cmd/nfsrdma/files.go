//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
)

// modeString formats NFS attributes' type and mode bits as `ls -l` does.
func modeString(a *nfs3.Fattr) string {
	var b [10]byte
	b[0] = "?-dbclsp"[min(int(a.Type), 7)]
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if a.Mode&(1<<(8-i)) != 0 {
			b[1+i] = rwx[i]
		} else {
			b[1+i] = '-'
		}
	}
	special := func(bit uint32, pos int, set, setNoX byte) {
		if a.Mode&bit == 0 {
			return
		}
		if b[pos] == '-' {
			b[pos] = setNoX
		} else {
			b[pos] = set
		}
	}
	special(0o4000, 3, 's', 'S')
	special(0o2000, 6, 's', 'S')
	special(0o1000, 9, 't', 'T')
	return string(b[:])
}

// lsLine formats one entry like `ls -l`. The name and the link target come from
// the server: they are shown by shownName.
func lsLine(w io.Writer, name string, a *nfs3.Fattr, target string) {
	mt := time.Unix(int64(a.Mtime.Seconds), int64(a.Mtime.Nseconds)).UTC().Format("2006-01-02 15:04")
	name = shownName(name)
	if target != "" {
		name += " -> " + shownName(target)
	}
	fmt.Fprintf(w, "%s %3d %6d %6d %12d %s %s\n", modeString(a), a.Nlink, a.UID, a.GID, a.Size, mt, name)
}

func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	unsorted := false
	ctx, cancel, f, pos, err := startCommand(ctx, "ls", args, 1, stderr, func(fs *flagSet) {
		fs.BoolVar(&unsorted, "U", false, "list entries in directory order as the server returns them, holding one reply at a time (for directories too large to sort)")
	})
	if err != nil {
		return err
	}
	defer cancel()
	r, s, err := mountRemote(ctx, f, pos[0])
	if err != nil {
		return err
	}
	defer s.Close()
	fh, attr, err := s.lookup(ctx, s.rel)
	if err != nil {
		return err
	}
	if attr.Type != nfs3.TypeDir {
		target := ""
		if attr.Type == nfs3.TypeLnk {
			target, _ = s.c.Readlink(ctx, fh)
		}
		lsLine(stdout, path.Base(r.path), &attr, target)
		return nil
	}
	n, total, err := listDir(ctx, s.c, fh, r, unsorted, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d entries, %d bytes (%s over %s)\n", n, total, r, s.proto)
	return nil
}

// listDir writes an `ls -l` line for each entry of directory fh (the remote r), sorted
// by name or, with unsorted, in the server's order one reply at a time, and returns
// the entries' count and total size. An entry the server sent without its handle or
// its attributes (both optional in READDIRPLUS, RFC 1813 §3.3.17) is looked up.
func listDir(ctx context.Context, c *nfsclient.Client, fh nfs3.FH, r remote, unsorted bool, stdout io.Writer) (n, total uint64, err error) {
	show := func(e *nfsclient.Entry) error {
		var err error
		switch {
		case e.FH == nil: // the server sent no handle: ask
			if e.FH, e.Attr, err = c.Lookup(ctx, fh, e.Name); err != nil {
				return fmt.Errorf("%s/%s: %w", r, shownName(e.Name), err)
			}
		case !e.Attr.Type.Valid(): // a handle but no attributes (a zero Attr): ask
			if e.Attr, err = c.Getattr(ctx, e.FH); err != nil {
				return fmt.Errorf("%s/%s: %w", r, shownName(e.Name), err)
			}
		}
		target := ""
		if e.Attr.Type == nfs3.TypeLnk {
			if target, err = c.Readlink(ctx, e.FH); err != nil {
				return fmt.Errorf("%s/%s: %w", r, shownName(e.Name), err)
			}
		}
		lsLine(stdout, e.Name, &e.Attr, target)
		n, total = n+1, total+e.Attr.Size
		return nil
	}
	if unsorted {
		for e, err := range c.ReaddirPlusSeq(ctx, fh) {
			if err != nil {
				return 0, 0, fmt.Errorf("%s: %w", r, err)
			}
			if err := show(&e); err != nil {
				return 0, 0, err
			}
		}
	} else {
		ents, err := c.ReaddirPlus(ctx, fh)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", r, err)
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
		for i := range ents {
			if err := show(&ents[i]); err != nil {
				return 0, 0, err
			}
		}
	}
	return n, total, nil
}

// rate formats n bytes in d as MB/s (10^6 bytes per second).
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MB/s", float64(n)/d.Seconds()/1e6)
}

func runGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	qd := 4
	ctx, cancel, f, pos, err := startCommand(ctx, "get", args, 2, stderr, func(fs *flagSet) {
		fs.IntVar(&qd, "qd", qd, "READs in flight (to a file; stdout is read one READ at a time)")
	})
	if err != nil {
		return err
	}
	defer cancel()
	if qd < 1 || qd > maxBenchQD {
		return fmt.Errorf("-qd %d: want 1 to %d", qd, maxBenchQD)
	}
	local := pos[1]
	r, s, err := mountRemote(ctx, f, pos[0])
	if err != nil {
		return err
	}
	defer s.Close()
	fh, attr, err := s.lookup(ctx, s.rel)
	if err != nil {
		return err
	}
	if attr.Type != nfs3.TypeReg {
		return fmt.Errorf("%s: %s (%v), not a regular file", r, typeName(attr.Type), attr.Type)
	}
	var out io.Writer = stdout
	var file *os.File
	report := stderr
	if local != "-" {
		// Like cp: LOCAL ending in "/" must be an existing directory.
		fi, err := os.Stat(local)
		switch {
		case err == nil && fi.IsDir():
			local = filepath.Join(local, path.Base(r.path))
		case strings.HasSuffix(local, "/") && err == nil:
			return fmt.Errorf("%s: not a directory", local)
		case strings.HasSuffix(local, "/") && errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%s: no such directory", local)
		case strings.HasSuffix(local, "/"):
			return err
		}
		// Written next to LOCAL and renamed over it once complete, so a failed copy
		// never leaves a truncated LOCAL behind.
		if file, err = os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".part-*"); err != nil {
			return err
		}
		defer os.Remove(file.Name())
		defer file.Close()
		out, report = file, stdout
	}
	start := time.Now()
	var n int64
	if file != nil {
		prog := startProgress(stderr, "get "+path.Base(r.path), int64(attr.Size), 500*time.Millisecond, false)
		n, err = readFileAt(ctx, s.c, fh, file, int64(attr.Size), qd, prog.add)
		prog.end()
	} else {
		// One READ past the size the file had is enough to see it end, or grow.
		n, err = readFile(ctx, s.c, fh, out, int64(attr.Size)+int64(s.c.MaxRead()))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	if n != int64(attr.Size) {
		return fmt.Errorf("%s: read %d bytes, but the file's size was %d when the copy started (changed meanwhile?)", r, n, attr.Size)
	}
	if file != nil {
		if err := file.Chmod(os.FileMode(attr.Mode & 0o777)); err != nil {
			return err
		}
		if err := file.Close(); err != nil {
			return err
		}
		if err := os.Rename(file.Name(), local); err != nil {
			return err
		}
	}
	el := time.Since(start)
	fmt.Fprintf(report, "get %s -> %s: %d bytes in %v (%s over %s)\n", r, local, n, el.Round(time.Microsecond), rate(n, el), s.proto)
	return nil
}

// readFile copies the file fh to w, MaxRead bytes per READ into one reused buffer
// (over RDMA the server places each READ's data straight into it), up to its end or
// to limit bytes, whichever comes first: a server that never reports the end does
// not make the copy endless.
func readFile(ctx context.Context, c *nfsclient.Client, fh nfs3.FH, w io.Writer, limit int64) (int64, error) {
	buf := make([]byte, c.MaxRead())
	var off int64
	for off < limit {
		n, eof, err := c.Read(ctx, fh, uint64(off), buf[:min(int64(len(buf)), limit-off)])
		if err != nil {
			return off, err
		}
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return off, err
			}
		}
		off += int64(n)
		if eof || n == 0 {
			return off, nil
		}
	}
	return off, nil
}

// writeFile writes the size bytes of src to fh from file offset base on, with
// UNSTABLE WRITEs of MaxWrite bytes, qd of them in flight, then COMMITs; if the
// server's write verifier changed meanwhile (it restarted and may have lost the data)
// it writes everything again, as RFC 1813 §3.3.21 requires.
func writeFile(ctx context.Context, c *nfsclient.Client, fh nfs3.FH, src io.ReaderAt, base, size int64, qd int, moved func(int)) error {
	chunk := int64(c.MaxWrite())
	for attempt := 0; attempt < 3; attempt++ {
		var (
			mu      sync.Mutex
			verf    [nfs3.WriteVerfSize]byte
			haveV   bool
			changed bool
		)
		err := inChunks(ctx, qd, chunk, size, func(ctx context.Context, buf []byte, off int64) error {
			n := int64(len(buf))
			// ReadAt may say io.EOF with a full buffer (the piece ends the file);
			// fewer bytes leave another piece's in buf, not to be sent as these.
			got, err := src.ReadAt(buf, off)
			if int64(got) < n {
				if err == nil || err == io.EOF {
					return fmt.Errorf("reading: the source ends at %d, before its %d bytes (did it shrink?)", off+int64(got), size)
				}
				return fmt.Errorf("reading at %d: %w", off+int64(got), err)
			}
			for done := int64(0); done < n; {
				r, err := c.Write(ctx, fh, uint64(base+off+done), buf[done:], nfs3.Unstable)
				if err != nil {
					return err
				}
				if r.Count == 0 {
					return fmt.Errorf("WRITE at %d made no progress", base+off+done)
				}
				mu.Lock()
				if !haveV {
					verf, haveV = r.Verf, true
				} else if r.Verf != verf {
					changed = true
				}
				mu.Unlock()
				done += int64(r.Count)
				moved(r.Count)
			}
			return nil
		})
		if err != nil {
			return err
		}
		cv, err := c.Commit(ctx, fh)
		if err != nil {
			return err
		}
		if !haveV || (!changed && cv == verf) {
			return nil
		}
	}
	return errors.New("the server's write verifier kept changing (is it restarting?)")
}

// streamWindow is how much of a stream writeStream holds: the data written since the
// last COMMIT, kept to be written again should the server's verifier change.
const streamWindow = 32 << 20

// writeStream writes all of r to fh, one window at a time (writeFile from memory,
// COMMIT included), so that memory stays bounded while data a restarted server may
// have lost can still be written again. Windows start at 1 MiB and double up to
// streamWindow, so a short stream costs little memory. It returns the bytes written.
func writeStream(ctx context.Context, c *nfsclient.Client, fh nfs3.FH, r io.Reader, qd int, moved func(int)) (int64, error) {
	buf := make([]byte, 1<<20)
	var base int64
	for {
		n, err := io.ReadFull(r, buf)
		if ctx.Err() != nil {
			// Interrupted: the end of the stream may be the producer's death by
			// the same Ctrl-C, not the end of its data.
			return base, context.Cause(ctx)
		}
		if n > 0 {
			if werr := writeFile(ctx, c, fh, bytes.NewReader(buf[:n]), base, int64(n), qd, moved); werr != nil {
				return base, werr
			}
			base += int64(n)
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return base, nil
		case err != nil:
			return base, fmt.Errorf("reading: %w", err)
		}
		if len(buf) < streamWindow {
			buf = make([]byte, min(2*len(buf), streamWindow))
		}
	}
}

// readFileAt copies the size bytes of the file fh to w at the same offsets, MaxRead
// bytes per READ with qd READs in flight, and returns the bytes read (less than size
// when the file is shorter now).
func readFileAt(ctx context.Context, c *nfsclient.Client, fh nfs3.FH, w io.WriterAt, size int64, qd int, moved func(int)) (int64, error) {
	var total atomic.Int64
	err := inChunks(ctx, qd, int64(c.MaxRead()), size, func(ctx context.Context, buf []byte, off int64) error {
		got := 0
		for got < len(buf) {
			n, eof, err := c.Read(ctx, fh, uint64(off)+uint64(got), buf[got:])
			if err != nil {
				return err
			}
			got += n
			if eof || n == 0 {
				break
			}
		}
		if _, err := w.WriteAt(buf[:got], off); err != nil {
			return err
		}
		total.Add(int64(got))
		moved(got)
		return nil
	})
	return total.Load(), err
}

// inChunks calls do for each chunk-byte piece of [0, size), taken in order of offset by
// at most qd goroutines, each with a buffer of its own cut to the piece's length.
// It stops at the first error (or when ctx ends) and returns it.
func inChunks(ctx context.Context, qd int, chunk, size int64, do func(ctx context.Context, buf []byte, off int64) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < qd && int64(w)*chunk < size; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, chunk)
			for ctx.Err() == nil {
				off := next.Add(1)*chunk - chunk
				if off >= size {
					return
				}
				if err := do(ctx, buf[:min(chunk, size-off)], off); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// mountRemote parses arg as host:/path and mounts the export holding the path.
func mountRemote(ctx context.Context, f *connFlags, arg string) (remote, *session, error) {
	r, err := parseRemote(arg)
	if err != nil {
		return remote{}, nil, err
	}
	s, err := mount(ctx, f, f.proto, r)
	if err != nil {
		return remote{}, nil, err
	}
	return r, s, nil
}

// parentRel is the export-relative path of the directory holding rel ("" for the
// export root).
func parentRel(rel string) string {
	if p := path.Dir(rel); p != "." {
		return p
	}
	return ""
}

// parentOf looks up the directory holding the session's path r and returns its handle
// and the path's last name. The export root has no parent here.
func (s *session) parentOf(ctx context.Context, r remote) (nfs3.FH, string, error) {
	if s.rel == "" {
		return nil, "", fmt.Errorf("%s: is the export root", r)
	}
	dfh, _, err := s.lookup(ctx, parentRel(s.rel))
	if err != nil {
		return nil, "", err
	}
	return dfh, path.Base(s.rel), nil
}

func runMkdir(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	mode := octal(0o755)
	ctx, cancel, f, pos, err := startCommand(ctx, "mkdir", args, 1, stderr, func(fs *flagSet) {
		fs.Var(&mode, "mode", "permission `bits`, octal")
	})
	if err != nil {
		return err
	}
	defer cancel()
	r, s, err := mountRemote(ctx, f, pos[0])
	if err != nil {
		return err
	}
	defer s.Close()
	dfh, name, err := s.parentOf(ctx, r)
	if err != nil {
		return err
	}
	if _, _, err := s.c.Mkdir(ctx, dfh, name, uint32(mode)); err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	fmt.Fprintf(stdout, "mkdir %s\n", r)
	return nil
}

func runRm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	ctx, cancel, f, pos, err := startCommand(ctx, "rm", args, 1, stderr, nil)
	if err != nil {
		return err
	}
	defer cancel()
	r, s, err := mountRemote(ctx, f, pos[0])
	if err != nil {
		return err
	}
	defer s.Close()
	dfh, name, err := s.parentOf(ctx, r)
	if err != nil {
		return err
	}
	_, attr, err := s.c.Lookup(ctx, dfh, name)
	if err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	if attr.Type == nfs3.TypeDir {
		err = s.c.Rmdir(ctx, dfh, name)
	} else {
		err = s.c.Remove(ctx, dfh, name)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	fmt.Fprintf(stdout, "removed %s\n", r)
	return nil
}

// octal is a flag.Value for permission bits written in octal.
type octal uint32

func (o *octal) String() string { return fmt.Sprintf("%04o", uint32(*o)) }

func (o *octal) Set(s string) error {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o7777 {
		return fmt.Errorf("want octal permission bits from 0 to 7777")
	}
	*o = octal(n)
	return nil
}

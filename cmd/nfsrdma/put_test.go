//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsd"
)

// TestPutInterruptedKeepsTarget interrupts a put that is replacing a file: the
// context is canceled (as SIGINT does) once 1 MiB of the 8 MiB has reached the
// server, through a proxy that counts the bytes. The old file is intact and no
// temporary file remains. Over RDMA the proxy carries the iWARP stream, so the WRITE
// data it counts are RDMA Read responses.
func TestPutInterruptedKeepsTarget(t *testing.T) {
	s := startServer(t, func(c *nfsd.Config) { c.MaxIO = 64 << 10 })
	old := randomBytes(200<<10, 7)
	src := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(src, randomBytes(8<<20, 8), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"tcp", "rdma"} {
		t.Run(proto, func(t *testing.T) {
			target := filepath.Join(s.export, "target-"+proto)
			if err := os.WriteFile(target, old, 0o600); err != nil {
				t.Fatal(err)
			}
			nfsAddr := s.info.TCP.String()
			if proto == "rdma" {
				nfsAddr = s.info.RDMA.String()
			}
			p := startPausingProxy(t, nfsAddr)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			p.mu.Lock()
			p.onUp = func(n int64) {
				if n >= 1<<20 {
					once.Do(cancel)
				}
			}
			p.mu.Unlock()
			tcp := strconv.Itoa(portOfAddr(s.info.TCP.String()))
			args := []string{"put", "-proto", proto, "-port", strconv.Itoa(p.port()), "-mountport", tcp, "-qd", "2", src, "127.0.0.1:/export/target-" + proto}
			err := run(ctx, args, io.Discard, io.Discard)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted put: %v, want context.Canceled", err)
			}
			if got, _ := os.ReadFile(target); !bytes.Equal(got, old) {
				t.Errorf("the target holds %d bytes after the interrupted put, want its old %d", len(got), len(old))
			}
			ents, _ := os.ReadDir(s.export)
			for _, e := range ents {
				if strings.Contains(e.Name(), ".nfsrdma-") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

// TestTrailingSlash: like cp, a destination ending in "/" must be an existing
// directory; an existing directory without the slash receives the file too; any
// other path names the new file.
func TestTrailingSlash(t *testing.T) {
	s := startServer(t)
	ldir := t.TempDir()
	src := filepath.Join(ldir, "x")
	os.WriteFile(src, []byte("data"), 0o644)
	os.Mkdir(filepath.Join(s.export, "dir"), 0o755)
	squashedOwner(t, filepath.Join(s.export, "dir"))
	os.WriteFile(filepath.Join(s.export, "dir", "file"), []byte("old"), 0o644)

	s.mustCLI(t, "put", src, "127.0.0.1:/export/dir/")
	s.mustCLI(t, "put", src, "127.0.0.1:/export/dir/newname")
	for _, name := range []string{"x", "newname"} {
		if got, _ := os.ReadFile(filepath.Join(s.export, "dir", name)); string(got) != "data" {
			t.Errorf("dir/%s holds %q", name, got)
		}
	}
	for _, tc := range []struct{ dst, want string }{
		{"127.0.0.1:/export/dir/missing/", "127.0.0.1:/export/dir/missing/: no such directory"},
		{"127.0.0.1:/export/dir/file/", "127.0.0.1:/export/dir/file/: not a directory"},
		{"127.0.0.1:/export/dir/missing/x", "NFS3ERR_NOENT"},
	} {
		if _, err := s.cli(t, "put", src, tc.dst); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("put x %s: %v, want an error containing %q", tc.dst, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(s.export, "dir", "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("put into dir/missing/ created something: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.export, "dir", "file")); string(got) != "old" {
		t.Errorf("dir/file changed to %q", got)
	}

	// get, locally.
	s.mustCLI(t, "get", "127.0.0.1:/export/dir/file", ldir+"/")
	s.mustCLI(t, "get", "127.0.0.1:/export/dir/file", filepath.Join(ldir, "renamed"))
	for _, name := range []string{"file", "renamed"} {
		if got, _ := os.ReadFile(filepath.Join(ldir, name)); string(got) != "old" {
			t.Errorf("local %s holds %q", name, got)
		}
	}
	for _, tc := range []struct{ dst, want string }{
		{filepath.Join(ldir, "missing") + "/", filepath.Join(ldir, "missing") + "/: no such directory"},
		{src + "/", src + "/: not a directory"},
	} {
		if _, err := s.cli(t, "get", "127.0.0.1:/export/dir/file", tc.dst); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("get to %s: %v, want an error containing %q", tc.dst, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(ldir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("get into missing/ created something: %v", err)
	}
}

// errAfter reads from r, then fails with err.
type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, e.err
	}
	return n, err
}

// put - writes standard input as a stream, in windows each committed before the next
// is read (the data here fills every window size up to streamWindow), to a path
// that must name the file; a stream that fails leaves the target as it was and no
// temporary file.
func TestPutStdin(t *testing.T) {
	s := startServer(t)
	data := randomBytes(2*streamWindow+123457, 9)
	defer func(r io.Reader) { stdin = r }(stdin)
	for _, proto := range []string{"rdma", "tcp"} {
		stdin = bytes.NewReader(data)
		out := s.mustCLI(t, "put", "-proto", proto, "-", "127.0.0.1:/export/streamed-"+proto)
		if want := fmt.Sprintf("put - -> 127.0.0.1:/export/streamed-%s: %d bytes", proto, len(data)); !strings.HasPrefix(out, want) {
			t.Errorf("over %s: %q, want it to begin %q", proto, out, want)
		}
		got, err := os.ReadFile(filepath.Join(s.export, "streamed-"+proto))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("over %s: the file has %d bytes (%v), want the %d streamed", proto, len(got), err, len(data))
		}
	}

	stdin = strings.NewReader("x")
	if _, err := s.cli(t, "put", "-", "127.0.0.1:/export/"); err == nil || !strings.Contains(err.Error(), "a directory; name the file that standard input goes to (127.0.0.1:/export/NAME)") {
		t.Errorf("stdin to a directory: %v", err)
	}

	target := filepath.Join(s.export, "kept")
	os.WriteFile(target, []byte("old"), 0o644)
	broken := errors.New("the pipe broke")
	stdin = &errAfter{r: bytes.NewReader(data[:5<<20]), err: broken}
	if _, err := s.cli(t, "put", "-", "127.0.0.1:/export/kept"); !errors.Is(err, broken) {
		t.Errorf("a failing stream: %v, want %v", err, broken)
	}
	if got, _ := os.ReadFile(target); string(got) != "old" {
		t.Errorf("the target holds %q after a failed stream", got)
	}
	ents, _ := os.ReadDir(s.export)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".nfsrdma-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// cancelAtEOF cancels a context as its reader ends, as a Ctrl-C that kills the
// producer of a pipe and interrupts put at once.
type cancelAtEOF struct {
	r      io.Reader
	cancel context.CancelFunc
}

func (c *cancelAtEOF) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		c.cancel()
	}
	return n, err
}

// An interrupt that ends the stream too is not taken for its end: nothing is renamed
// over the target.
func TestPutStdinInterrupted(t *testing.T) {
	s := startServer(t)
	defer func(r io.Reader) { stdin = r }(stdin)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin = &cancelAtEOF{r: bytes.NewReader(randomBytes(3<<20, 10)), cancel: cancel}
	args := append(append([]string{"put"}, s.conn...), "-", "127.0.0.1:/export/cut")
	if err := run(ctx, args, io.Discard, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted stream: %v, want context.Canceled", err)
	}
	ents, _ := os.ReadDir(s.export)
	for _, e := range ents {
		t.Errorf("%s left in the export", e.Name())
	}
}

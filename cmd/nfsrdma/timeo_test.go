//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfsd"
)

// pausingProxy forwards TCP connections to a server; while paused it holds back
// what the server sends, so the server seems to stop answering.
type pausingProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	up     int64       // bytes forwarded to the server, all connections (under mu)
	onUp   func(int64) // when set, called with up before each forward to the server
	down   int64       // bytes forwarded from the server, all connections (under mu)
	// pauseAt, when positive, pauses the proxy (once) when down reaches it.
	pauseAt int64
	// crashAt, when positive, makes the server seem to crash when down reaches it:
	// every connection is closed, and new ones are closed at once until restart.
	crashAt int64
	crashed bool
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
}

// restart ends a crash: connections are forwarded again.
func (p *pausingProxy) restart() {
	p.mu.Lock()
	p.crashed = false
	p.mu.Unlock()
}

func startPausingProxy(t *testing.T, target string) *pausingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pausingProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setPaused(false)
		p.wg.Wait()
	})
	return p
}

func (p *pausingProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *pausingProxy) setPaused(v bool) {
	p.mu.Lock()
	p.paused = v
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *pausingProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		crashed := p.crashed
		p.mu.Unlock()
		if crashed {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { // client to server
			defer p.wg.Done()
			defer c.Close()
			defer s.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				p.mu.Lock()
				p.up += int64(n)
				up, on := p.up, p.onUp
				p.mu.Unlock()
				if on != nil {
					on(up)
				}
				if n > 0 {
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // server to client, held while paused
			defer p.wg.Done()
			defer c.Close()
			defer s.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				p.mu.Lock()
				if p.pauseAt > 0 && p.down < p.pauseAt && p.down+int64(n) >= p.pauseAt {
					p.paused = true
				}
				if p.crashAt > 0 && p.down < p.crashAt && p.down+int64(n) >= p.crashAt {
					p.crashed = true
					for k := range p.conns {
						k.Close()
					}
					clear(p.conns)
				}
				p.down += int64(n)
				for p.paused {
					p.cond.Wait()
				}
				p.mu.Unlock()
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// watchWriter collects what is written and calls on for each write, unlocked.
type watchWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	on  func(s string)
}

func (w *watchWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(b)
	s := w.buf.String()
	w.mu.Unlock()
	w.on(s)
	return len(b), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestServerNotRespondingThenOK runs ls through a proxy that holds back the server's
// replies until the client has said "server 127.0.0.1 not responding, still
// trying"; then the replies flow, the client says "server 127.0.0.1 OK" and the
// listing completes. Nothing waits on time: the proxy resumes on the message.
func TestServerNotRespondingThenOK(t *testing.T) {
	s := startServer(t)
	os.WriteFile(filepath.Join(s.export, "present"), []byte("hello"), 0o644)
	p := startPausingProxy(t, s.info.TCP.String())
	p.setPaused(true)
	errOut := &watchWriter{on: func(s string) {
		if strings.Contains(s, "not responding") {
			p.setPaused(false)
		}
	}}
	var out bytes.Buffer
	port := strconv.Itoa(p.port())
	err := run(context.Background(), []string{"ls", "-proto", "tcp", "-port", port, "-mountport", port, "-timeo", "300ms", "-timeout", "2m", "127.0.0.1:/export"}, &out, errOut)
	if err != nil {
		t.Fatalf("ls: %v\nstderr: %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), " present\n") {
		t.Errorf("ls printed %q", out.String())
	}
	e := errOut.String()
	nr := strings.Index(e, "nfsrdma: server 127.0.0.1 not responding, still trying\n")
	ok := strings.LastIndex(e, "nfsrdma: server 127.0.0.1 OK\n")
	if nr < 0 || ok < nr || strings.LastIndex(e, "not responding") > ok {
		t.Errorf("stderr %q: want \"not responding\", then \"OK\" last", e)
	}
}

// silentListener is a TCP listener whose accept queue is full: the kernel drops
// further SYNs, so a connection attempt neither succeeds nor fails.
func silentListener(t *testing.T) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*unix.SockaddrInet4).Port
	// Fill the accept queue (backlog 0 holds one connection) and never accept.
	for i := 0; i < 2; i++ {
		d := net.Dialer{Timeout: 0}
		ctx, cancel := context.WithTimeout(context.Background(), 200e6)
		c, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
		cancel()
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	return port
}

// TestConnectTimeout: a server whose listener never completes the connection (MOUNT
// over TCP), and an RDMA listener that accepts TCP but never answers the MPA
// request, both end in an error naming the address and -connect-timeout.
func TestConnectTimeout(t *testing.T) {
	port := strconv.Itoa(silentListener(t))
	_, err := (&testServer{conn: []string{"-mountport", port, "-connect-timeout", "50ms"}}).cli(t, "ls", "127.0.0.1:/x")
	if err == nil || !strings.Contains(err.Error(), "MOUNT over TCP at 127.0.0.1:"+port+": no connection within 50ms (-connect-timeout)") {
		t.Errorf("ls against a silent MOUNT port: %v", err)
	}

	s := startServer(t)
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	mport := strconv.Itoa(mute.Addr().(*net.TCPAddr).Port)
	_, err = s.cli(t, "ls", "-rdma-port", mport, "-connect-timeout", "50ms", "127.0.0.1:/export")
	if err == nil || !strings.Contains(err.Error(), "NFS over RDMA at 127.0.0.1:"+mport+": no connection within 50ms (-connect-timeout)") {
		t.Errorf("ls against a mute RDMA port: %v", err)
	}
}

// TestServerStallsMidTransfer: the server's replies stop in the middle of a 4 MiB
// get (the proxy pauses after 1 MiB of them) over RDMA and over TCP; the client
// says the server is not responding, retransmits (over RDMA on a new connection),
// the proxy resumes on that message, and the get completes with the right bytes and
// "server 127.0.0.1 OK". With -log-format json the two messages are log records.
func TestServerStallsMidTransfer(t *testing.T) {
	s := startServer(t, func(c *nfsd.Config) { c.MaxIO = 64 << 10 })
	data := randomBytes(4<<20, 9)
	os.WriteFile(filepath.Join(s.export, "big"), data, 0o644)
	for _, tc := range []struct{ proto, format string }{{"rdma", "text"}, {"tcp", "json"}} {
		t.Run(tc.proto, func(t *testing.T) {
			target := s.info.RDMA.String()
			if tc.proto == "tcp" {
				target = s.info.TCP.String()
			}
			p := startPausingProxy(t, target)
			p.mu.Lock()
			p.pauseAt = 1 << 20
			p.mu.Unlock()
			errOut := &watchWriter{on: func(s string) {
				if strings.Contains(s, "not responding") {
					p.setPaused(false)
				}
			}}
			dst := filepath.Join(t.TempDir(), "big")
			tcp := strconv.Itoa(portOfAddr(s.info.TCP.String()))
			err := run(context.Background(), []string{"get", "-proto", tc.proto, "-port", strconv.Itoa(p.port()), "-mountport", tcp,
				"-timeo", "300ms", "-log-format", tc.format, "-timeout", "2m", "127.0.0.1:/export/big", dst}, io.Discard, errOut)
			if err != nil {
				t.Fatalf("get: %v\nstderr: %s", err, errOut.String())
			}
			if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes that differ from the file's %d", len(got), len(data))
			}
			e := errOut.String()
			if tc.format == "text" {
				nr := strings.Index(e, "nfsrdma: server 127.0.0.1 not responding, still trying\n")
				ok := strings.LastIndex(e, "nfsrdma: server 127.0.0.1 OK\n")
				if nr < 0 || ok < nr || strings.LastIndex(e, "not responding") > ok {
					t.Errorf("stderr %q: want \"not responding\", then \"OK\" last", e)
				}
				return
			}
			var msgs []string
			for _, l := range strings.Split(strings.TrimSpace(e), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("stderr line %q is not JSON: %v", l, err)
				}
				if m["server"] != "127.0.0.1" {
					t.Errorf("record %v lacks server=127.0.0.1", m)
				}
				msgs = append(msgs, m["@message"].(string))
			}
			if len(msgs) < 2 || msgs[0] != "server not responding, still trying" || msgs[len(msgs)-1] != "server OK" {
				t.Errorf("log messages %q", msgs)
			}
		})
	}
}

// TestServerRestartsMidTransfer: the server seems to crash in the middle of a 4 MiB
// get (the proxy closes every connection after 1 MiB of replies and refuses new ones)
// and comes back once the client has said it is not responding; over RDMA and TCP
// the client reconnects, retransmits, says "server 127.0.0.1 OK" and gets the right
// bytes.
func TestServerRestartsMidTransfer(t *testing.T) {
	s := startServer(t, func(c *nfsd.Config) { c.MaxIO = 64 << 10 })
	data := randomBytes(4<<20, 10)
	os.WriteFile(filepath.Join(s.export, "big"), data, 0o644)
	for _, proto := range []string{"rdma", "tcp"} {
		t.Run(proto, func(t *testing.T) {
			target := s.info.RDMA.String()
			if proto == "tcp" {
				target = s.info.TCP.String()
			}
			p := startPausingProxy(t, target)
			p.mu.Lock()
			p.crashAt = 1 << 20
			p.mu.Unlock()
			errOut := &watchWriter{on: func(s string) {
				if strings.Contains(s, "not responding") {
					p.restart()
				}
			}}
			dst := filepath.Join(t.TempDir(), "big")
			tcp := strconv.Itoa(portOfAddr(s.info.TCP.String()))
			err := run(context.Background(), []string{"get", "-proto", proto, "-port", strconv.Itoa(p.port()), "-mountport", tcp,
				"-timeo", "300ms", "-timeout", "2m", "127.0.0.1:/export/big", dst}, io.Discard, errOut)
			if err != nil {
				t.Fatalf("get: %v\nstderr: %s", err, errOut.String())
			}
			if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes that differ from the file's %d", len(got), len(data))
			}
			e := errOut.String()
			nr := strings.Index(e, "nfsrdma: server 127.0.0.1 not responding, still trying\n")
			ok := strings.LastIndex(e, "nfsrdma: server 127.0.0.1 OK\n")
			if nr < 0 || ok < nr || strings.LastIndex(e, "not responding") > ok {
				t.Errorf("stderr %q: want \"not responding\", then \"OK\" last", e)
			}
		})
	}
}

// Package stallproxy is a TCP proxy for tests that turns a well-behaved client into a
// hostile one: once frozen it stops reading what the server sends, so the server's
// socket fills as with a peer that never reads its socket (and RDMA Reads the server
// sends over it go unanswered), while what the client sends still reaches the server.
package stallproxy

import (
	"io"
	"net"
	"sync"
)

// serverReadBuffer is the receive buffer of a proxy's connection to the server.
const serverReadBuffer = 64 << 10

// A Proxy forwards the connections it accepts to a target address until frozen.
type Proxy struct {
	ln     net.Listener
	target string
	frozen chan struct{} // closed by Freeze
	done   chan struct{} // closed by Close
	once   sync.Once
	cOnce  sync.Once
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

// New listens on a loopback port and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, frozen: make(chan struct{}), done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		select {
		case <-p.frozen:
			c.Close() // refuse new connections once frozen
			continue
		default:
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		// A small receive buffer towards the server: once frozen, the server's
		// replies stop after what its own send buffer holds, not after megabytes
		// more that a large, autotuned receive window would take in, so a test
		// needs few calls in flight to stall the server.
		if tc, ok := s.(*net.TCPConn); ok {
			tc.SetReadBuffer(serverReadBuffer)
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { // client to server, always
			defer p.wg.Done()
			io.Copy(s, c)
		}()
		go func() { // server to client, until frozen
			defer p.wg.Done()
			p.serverToClient(s, c)
		}()
	}
}

func (p *Proxy) serverToClient(s, c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		select {
		case <-p.frozen:
			<-p.done // never read again
			return
		default:
		}
		n, err := s.Read(buf)
		if n > 0 {
			select {
			case <-p.frozen: // read as the freeze came: drop it
				<-p.done
				return
			default:
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Freeze stops the server-to-client direction of every connection and refuses new
// connections.
func (p *Proxy) Freeze() { p.once.Do(func() { close(p.frozen) }) }

// Close closes the listener and every connection, and waits for the proxy's
// goroutines.
func (p *Proxy) Close() {
	p.cOnce.Do(func() {
		p.Freeze()
		close(p.done)
		p.ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
}

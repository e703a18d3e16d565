package soft

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// Connection scaling: N connections, one 4 KiB "read" in flight on each (a
// 128-byte request Send; the reply is a 4 KiB RDMA Write and a 128-byte
// Send, as an RPC-over-RDMA server answers an NFS READ), against the same
// exchange over raw TCP (a 128-byte request, a 4224-byte reply in one
// write). ns/op is wall time per exchange over all connections, so the
// aggregate rate is 1e9/(ns/op); compare the two at each N.
//
//	go test -run '^$' -bench ConnScaling -benchtime 20000x ./verbs/soft

const (
	scaleReq  = 128
	scaleData = 4096
)

func BenchmarkConnScaling(b *testing.B) {
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("soft/conns=%d", n), func(b *testing.B) { benchScaleSoft(b, n) })
		b.Run(fmt.Sprintf("tcp/conns=%d", n), func(b *testing.B) { benchScaleTCP(b, n) })
	}
}

// runScale runs b.N exchanges spread over conns goroutines.
func runScale(b *testing.B, conns int, exchange func(c int) error) {
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := exchange(c); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
}

// scalePair is one soft connection of the scaling benchmark.
type scalePair struct {
	cli, srv         *endpoint
	creq, cdata      verbs.MR // client request and reply receive buffers
	sreq, sdata      verbs.MR // server request receive buffer and reply source
	dataSink         verbs.MR // client memory the server writes into
	crecv, srecv     verbs.RecvWR
	csend            verbs.SendWR
	swrite, ssend    verbs.SendWR
	cwc, swc         []verbs.Completion
	srvErr           chan error
	stop             context.CancelFunc
	srvCtx           context.Context
	crecvSGE         [1]verbs.SGE
	csendSGE, wsSGE  [1]verbs.SGE
	ssendSGE, srsSGE [1]verbs.SGE
}

func benchScaleSoft(b *testing.B, conns int) {
	pairs := make([]*scalePair, conns)
	for i := range pairs {
		p := &scalePair{}
		p.cli, p.srv = connectPair(b, pairConfig{client: Config{SiwKick: -1}, server: Config{SiwKick: -1}, depth: 8})
		p.creq = p.cli.reg(b, make([]byte, scaleReq), verbs.AccessLocalWrite)
		p.cdata = p.cli.reg(b, make([]byte, scaleReq), verbs.AccessLocalWrite)
		p.dataSink = p.cli.reg(b, make([]byte, scaleData), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		p.sreq = p.srv.reg(b, make([]byte, scaleReq), verbs.AccessLocalWrite)
		p.sdata = p.srv.reg(b, make([]byte, scaleData+scaleReq), verbs.AccessLocalWrite)
		p.crecvSGE[0] = verbs.SGE{MR: p.cdata, Length: scaleReq}
		p.crecv = verbs.RecvWR{ID: 1, SGL: p.crecvSGE[:]}
		p.csendSGE[0] = verbs.SGE{MR: p.creq, Length: scaleReq}
		p.csend = verbs.SendWR{ID: 2, Op: verbs.OpSend, SGL: p.csendSGE[:]}
		p.srsSGE[0] = verbs.SGE{MR: p.sreq, Length: scaleReq}
		p.srecv = verbs.RecvWR{ID: 3, SGL: p.srsSGE[:]}
		p.wsSGE[0] = verbs.SGE{MR: p.sdata, Length: scaleData}
		p.swrite = verbs.SendWR{ID: 4, Op: verbs.OpWrite, SGL: p.wsSGE[:], RemoteSTag: p.dataSink.RKey(), RemoteTO: p.dataSink.Addr()}
		p.ssendSGE[0] = verbs.SGE{MR: p.sdata, Offset: scaleData, Length: scaleReq}
		p.ssend = verbs.SendWR{ID: 5, Op: verbs.OpSend, SGL: p.ssendSGE[:]}
		p.cwc, p.swc = make([]verbs.Completion, 1), make([]verbs.Completion, 1)
		if err := p.srv.qp.PostRecv(&p.srecv); err != nil {
			b.Fatal(err)
		}
		p.srvCtx, p.stop = context.WithCancel(context.Background())
		p.srvErr = make(chan error, 1)
		go p.serve()
		pairs[i] = p
	}
	runScale(b, conns, func(c int) error {
		p := pairs[c]
		if err := p.cli.qp.PostRecv(&p.crecv); err != nil {
			return err
		}
		if err := p.cli.qp.PostSend(&p.csend); err != nil {
			return err
		}
		return scaleWait(context.Background(), p.cli.cq, p.cwc)
	})
	for _, p := range pairs {
		p.stop()
		if err := <-p.srvErr; err != nil {
			b.Error(err)
		}
	}
}

// serve answers every request with an RDMA Write and a Send, posted back
// to back.
func (p *scalePair) serve() {
	for {
		if err := scaleWait(p.srvCtx, p.srv.cq, p.swc); err != nil {
			if p.srvCtx.Err() != nil {
				err = nil
			}
			p.srvErr <- err
			return
		}
		// The next request's receive is posted before the reply goes out.
		if err := p.srv.qp.PostRecv(&p.srecv); err != nil {
			p.srvErr <- err
			return
		}
		for _, wr := range []*verbs.SendWR{&p.swrite, &p.ssend} {
			if err := p.srv.qp.PostSend(wr); err != nil {
				p.srvErr <- err
				return
			}
		}
	}
}

// scaleWait waits for one successful completion.
func scaleWait(ctx context.Context, cq verbs.CQ, wc []verbs.Completion) error {
	for {
		n, err := cq.Poll(wc[:1])
		if err != nil {
			return err
		}
		if n == 1 {
			if wc[0].Status != verbs.StatusSuccess {
				return fmt.Errorf("completion %v: %v", wc[0].Status, wc[0].Err)
			}
			return nil
		}
		if err := cq.Wait(ctx); err != nil {
			return err
		}
	}
}

func benchScaleTCP(b *testing.B, conns int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req := make([]byte, scaleReq)
				reply := make([]byte, scaleData+scaleReq)
				for {
					if _, err := io.ReadFull(c, req); err != nil {
						return
					}
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	cs := make([]net.Conn, conns)
	for i := range cs {
		if cs[i], err = net.Dial("tcp", ln.Addr().String()); err != nil {
			b.Fatal(err)
		}
		defer cs[i].Close()
	}
	reqs := make([][]byte, conns)
	replies := make([][]byte, conns)
	for i := range reqs {
		reqs[i], replies[i] = make([]byte, scaleReq), make([]byte, scaleData+scaleReq)
	}
	runScale(b, conns, func(c int) error {
		if _, err := cs[c].Write(reqs[c]); err != nil {
			return err
		}
		_, err := io.ReadFull(cs[c], replies[c])
		return err
	})
}

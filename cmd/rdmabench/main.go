// Command rdmabench measures the software iWARP provider (package
// verbs/soft) against plain TCP on the same path, in the same run.
//
// It reports RDMA Write, RDMA Read and Send/Recv bandwidth at 64 KiB and
// 1 MiB and small-message Send/Recv round-trip latency, each next to the
// equivalent raw TCP figure and their speed ratio ("speedup", as PERFORMANCE.md
// defines a speed ratio: TCP's time over RDMA's, so RDMA's bandwidth over TCP's
// and TCP's round trip over RDMA's). Above 1, RDMA is faster, on every row.
//
// Usage:
//
//	rdmabench -self                     # server and client in one process on 127.0.0.1
//	rdmabench -listen 0.0.0.0:7471      # server: iWARP on 7471, raw TCP on 7472
//	rdmabench -connect host:7471        # client against a running server
//
// Built with -tags ibverbs, -provider ibverbs -device rxe0 runs either side
// on a libibverbs device (package verbs/ibverbs) instead of verbs/soft.
//
// The server accepts any number of connections from any iWARP peer (MPA
// revision 1 or 2, with or without CRC). It advertises a 1 MiB region for
// RDMA Write and Read in its MPA Reply private data ("RDMABNCH", STag, TO,
// length); peers that ignore it still get a working connection. Every test
// is bounded by -duration and -max-iters.
//
// -version prints the version; -h the flags (exit status 0 for both). A bad
// command line, such as -rounds 0, a -duration not positive or a -small size
// outside 1 byte to 1 MiB, exits 2 naming the flag.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
	"github.com/go-rpcrdma/rpcrdma/internal/cli"
	"github.com/go-rpcrdma/rpcrdma/verbs"
	"github.com/go-rpcrdma/rpcrdma/verbs/soft"
)

const (
	regionSize = 1 << 20 // exposed region and largest message
	recvDepth  = 16      // receives the server keeps posted
	window     = 8       // work requests in flight per batch
	pdMagic    = "RDMABNCH"
)

// Message types: the first byte of every Send the client makes.
const (
	msgPing = 'P' // echo the message back
	msgBulk = 'B' // count it
	msgAck  = 'A' // count it and answer with a 1-byte Send
)

var (
	listen    = flag.String("listen", "", "run the server on `ADDR` (iWARP; raw TCP on port+1)")
	connect   = flag.String("connect", "", "run the client against the server at `ADDR`")
	self      = flag.Bool("self", false, "run server and client in this process over 127.0.0.1")
	duration  = flag.Duration("duration", time.Second, "time budget per measurement (split over -rounds)")
	rounds    = flag.Int("rounds", 5, "alternating iWARP/TCP rounds per measurement; medians are reported")
	maxIters  = flag.Int("max-iters", 100000, "iteration cap per measurement round")
	crc       = flag.Bool("crc", false, "request MPA CRC32c")
	maxFPDU   = flag.Int("max-fpdu", 0, "maximum FPDU size in bytes (0: from the TCP MSS)")
	noTCP     = flag.Bool("no-tcp", false, "skip the raw TCP baseline")
	smallSize = flag.Int("small", 64, "message size for the latency test, bytes")
	version   = flag.Bool("version", false, "print the version and exit")
)

func main() {
	flag.Parse()
	if *version {
		fmt.Println(cli.VersionLine("rdmabench"))
		return
	}
	log.SetFlags(0)
	log.SetPrefix("rdmabench: ")
	if err := checkFlags(); err != nil {
		log.Print(err)
		os.Exit(cli.ExitUsage)
	}
	dev, err := openDevice()
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case *self:
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		addr, err := startServer(ctx, dev, "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		if err := runClient(dev, addr); err != nil {
			log.Fatal(err)
		}
	case *listen != "":
		addr, err := startServer(context.Background(), dev, *listen)
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("listening on %s (iWARP) and %s (TCP)", addr, tcpAddr(addr))
		select {}
	case *connect != "":
		if err := runClient(dev, *connect); err != nil {
			log.Fatal(err)
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
}

// checkFlags returns a *cli.UsageError naming the first measurement flag out of
// range: with no rounds, no time or no iterations a measurement has no samples, and
// the latency test's messages must hold 1 byte (the echo request) to a server
// buffer's size.
func checkFlags() error {
	switch {
	case *rounds < 1:
		return cli.Usagef("-rounds %d: want at least 1", *rounds)
	case *duration <= 0:
		return cli.Usagef("-duration %v: want a positive duration", *duration)
	case *maxIters < 1:
		return cli.Usagef("-max-iters %d: want at least 1", *maxIters)
	case *smallSize < 1 || *smallSize > regionSize:
		return cli.Usagef("-small %d: want 1 to %d bytes", *smallSize, regionSize)
	}
	return nil
}

// tcpAddr is the raw-TCP baseline address: the iWARP port plus one.
func tcpAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}

// ---- server ----

func startServer(ctx context.Context, dev verbs.Device, addr string) (string, error) {
	ln, err := dev.Listen(ctx, addr)
	if err != nil {
		return "", err
	}
	actual := ln.Addr().String()
	tl, err := net.Listen("tcp", tcpAddr(actual))
	if err != nil {
		ln.Close()
		return "", fmt.Errorf("raw TCP listener: %w", err)
	}
	go func() {
		<-ctx.Done()
		ln.Close()
		tl.Close()
	}()
	go func() {
		for {
			req, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				if err := serveConn(ctx, dev, req); err != nil && !errors.Is(err, verbs.ErrFlushed) {
					log.Printf("connection from %v: %v", req.RemoteAddr(), err)
				}
			}()
		}
	}()
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go serveTCP(c)
		}
	}()
	return actual, nil
}

// serveConn serves one iWARP connection until the peer disconnects.
func serveConn(ctx context.Context, dev verbs.Device, req verbs.ConnRequest) error {
	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	defer pd.Close()
	cq, err := dev.CreateCQ(4 * recvDepth)
	if err != nil {
		return err
	}
	defer cq.Close()
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: recvDepth, MaxRecvWR: recvDepth})
	if err != nil {
		return err
	}
	defer qp.Close()
	region := make([]byte, regionSize)
	rmr, err := pd.RegMR(region, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	if err != nil {
		return err
	}
	defer rmr.Close()
	bufs := make([]byte, recvDepth*regionSize)
	bmr, err := pd.RegMR(bufs, verbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	defer bmr.Close()
	recv := func(i uint64) error {
		return qp.PostRecv(&verbs.RecvWR{ID: i, SGL: []verbs.SGE{{MR: bmr, Offset: int(i) * regionSize, Length: regionSize}}})
	}
	for i := uint64(0); i < recvDepth; i++ {
		if err := recv(i); err != nil {
			return err
		}
	}
	pdata := make([]byte, 0, 24)
	pdata = append(pdata, pdMagic...)
	pdata = binary.BigEndian.AppendUint32(pdata, rmr.RKey())
	pdata = binary.BigEndian.AppendUint64(pdata, rmr.Addr())
	pdata = binary.BigEndian.AppendUint32(pdata, regionSize)
	if _, err := req.Accept(ctx, qp, verbs.ConnParams{PrivateData: pdata, IRD: soft.MaxIRDORD}); err != nil {
		return err
	}
	wc := make([]verbs.Completion, 8)
	send := verbs.SendWR{Op: verbs.OpSend, SGL: make([]verbs.SGE, 1)}
	for {
		n, err := cq.Poll(wc)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := cq.Wait(ctx); err != nil {
				return err
			}
			continue
		}
		for _, c := range wc[:n] {
			if c.Status != verbs.StatusSuccess {
				return c.Err
			}
			if c.Opcode != verbs.OpcodeRecv {
				continue
			}
			off := int(c.ID) * regionSize
			var reply int
			if c.ByteLen > 0 {
				switch bufs[off] {
				case msgPing:
					reply = c.ByteLen
				case msgAck:
					reply = 1
				}
			}
			// Re-post before answering, so the next message finds a buffer.
			if err := recv(c.ID); err != nil {
				return err
			}
			if reply > 0 {
				// The echo goes out of the receive buffer it arrived in;
				// that buffer is re-posted already but the client sends
				// nothing before it sees the reply.
				send.SGL[0] = verbs.SGE{MR: bmr, Offset: off, Length: reply}
				if err := qp.PostSend(&send); err != nil {
					return err
				}
			}
		}
	}
}

// serveTCP is the raw TCP baseline server. Each command is op(1) total(8)
// chunk(4): 'W' read total bytes then answer 1 byte; 'R' write total bytes
// in chunks; 'P' echo total messages of chunk bytes.
func serveTCP(c net.Conn) {
	defer c.Close()
	var cmd [13]byte
	buf := make([]byte, regionSize)
	for {
		if _, err := io.ReadFull(c, cmd[:]); err != nil {
			return
		}
		total := binary.BigEndian.Uint64(cmd[1:])
		chunk := int(binary.BigEndian.Uint32(cmd[9:]))
		if chunk <= 0 || chunk > regionSize {
			return
		}
		switch cmd[0] {
		case 'W':
			for left := total; left > 0; {
				n := min(left, uint64(len(buf)))
				if _, err := io.ReadFull(c, buf[:n]); err != nil {
					return
				}
				left -= n
			}
			c.Write(buf[:1])
		case 'R':
			for sent := uint64(0); sent < total; sent += uint64(chunk) {
				if _, err := c.Write(buf[:chunk]); err != nil {
					return
				}
			}
		case 'P':
			for i := uint64(0); i < total; i++ {
				if _, err := io.ReadFull(c, buf[:chunk]); err != nil {
					return
				}
				if _, err := c.Write(buf[:chunk]); err != nil {
					return
				}
			}
		default:
			return
		}
	}
}

// ---- client ----

type client struct {
	qp     verbs.QP
	cq     verbs.CQ
	mr     verbs.MR // source / sink, regionSize
	recvMR verbs.MR
	stag   uint32
	to     uint64
	rlen   int
	wc     []verbs.Completion
	ord    int
	recvWR verbs.RecvWR
	ctx    context.Context
}

func runClient(dev verbs.Device, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	defer pd.Close()
	cq, err := dev.CreateCQ(64)
	if err != nil {
		return err
	}
	defer cq.Close()
	qp, err := pd.CreateQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 4 * window, MaxRecvWR: 4 * window})
	if err != nil {
		return err
	}
	defer qp.Close()
	// Three regions: bulk messages ('B'), ack requests ('A'), pings ('P').
	// A buffer must not change until its Send completes, so each message
	// type has its own.
	mem := make([]byte, 3*regionSize)
	mem[0], mem[regionSize], mem[2*regionSize] = msgBulk, msgAck, msgPing
	mr, err := pd.RegMR(mem, verbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	defer mr.Close()
	recvMR, err := pd.RegMR(make([]byte, regionSize), verbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	defer recvMR.Close()
	info, err := dev.Dial(ctx, addr, qp, verbs.ConnParams{ORD: 4 * window, IRD: 1})
	if err != nil {
		return err
	}
	c := &client{qp: qp, cq: cq, mr: mr, recvMR: recvMR, wc: make([]verbs.Completion, 1), ord: info.ORD, ctx: ctx}
	c.recvWR = verbs.RecvWR{SGL: []verbs.SGE{{MR: recvMR, Length: regionSize}}}
	pdata := info.PrivateData
	if len(pdata) >= 24 && string(pdata[:8]) == pdMagic {
		c.stag = binary.BigEndian.Uint32(pdata[8:])
		c.to = binary.BigEndian.Uint64(pdata[12:])
		c.rlen = int(binary.BigEndian.Uint32(pdata[20:]))
	}
	fmt.Printf("rdmabench: %s, MPA CRC %v, ORD %d, %v per measurement in %d rounds (medians), max %d iterations per round\n",
		addr, *crc, info.ORD, *duration, *rounds, *maxIters)
	fmt.Println("speedup: RDMA's speed over raw TCP's (bandwidth RDMA/TCP, round trip TCP/RDMA); above 1, RDMA is faster")
	fmt.Printf("%-16s %9s %16s %16s %8s\n", "test", "size", "RDMA ("+dev.Name()+")", "raw TCP", "speedup")
	taddr := tcpAddr(addr)
	var tc net.Conn
	if !*noTCP {
		if tc, err = net.DialTimeout("tcp", taddr, 5*time.Second); err != nil {
			fmt.Printf("(no raw TCP baseline at %s: %v)\n", taddr, err)
			tc = nil
		} else {
			defer tc.Close()
		}
	}
	tcpOK := tc != nil
	for _, size := range []int{64 << 10, 1 << 20} {
		if c.rlen >= size {
			bw, tbw, err := paired(func() (float64, error) { return c.bandwidth(verbs.OpWrite, size) },
				func() float64 { return tcpBandwidth(tc, 'W', size) }, tcpOK)
			if err != nil {
				return fmt.Errorf("rdma write: %w", err)
			}
			report("RDMA Write", size, bw, tbw, "MB/s")
			if c.ord > 0 {
				bw, tbw, err = paired(func() (float64, error) { return c.bandwidth(verbs.OpRead, size) },
					func() float64 { return tcpBandwidth(tc, 'R', size) }, tcpOK)
				if err != nil {
					return fmt.Errorf("rdma read: %w", err)
				}
				report("RDMA Read", size, bw, tbw, "MB/s")
			}
		}
		bw, tbw, err := paired(func() (float64, error) { return c.bandwidth(verbs.OpSend, size) },
			func() float64 { return tcpBandwidth(tc, 'W', size) }, tcpOK)
		if err != nil {
			return fmt.Errorf("send/recv: %w", err)
		}
		report("Send/Recv", size, bw, tbw, "MB/s")
	}
	lat, tlat, err := paired(func() (float64, error) { return c.latency(*smallSize) },
		func() float64 { return tcpLatency(tc, *smallSize) }, tcpOK)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	report("Send/Recv RTT", *smallSize, lat, tlat, "µs")
	return nil
}

// paired runs -rounds alternating rounds of the iWARP measurement and its
// TCP baseline and returns the median of each, so that load from other
// processes affects both sides alike.
func paired(rdma func() (float64, error), tcp func() float64, withTCP bool) (float64, float64, error) {
	var a, b []float64
	for i := 0; i < *rounds; i++ {
		v, err := rdma()
		if err != nil {
			return 0, 0, err
		}
		a = append(a, v)
		if withTCP {
			b = append(b, tcp())
		}
	}
	return benchio.Median(a), benchio.Median(b), nil
}

// roundDuration is the time budget of one measurement round.
func roundDuration() time.Duration { return *duration / time.Duration(max(*rounds, 1)) }

// report prints a result row: the RDMA figure v, the raw TCP baseline's tcp (0: none)
// in the same unit, and their speed ratio (see row).
func report(name string, size int, v, tcp float64, unit string) {
	fmt.Print(row(name, size, v, tcp, unit))
}

// row formats a result row. Its speedup column is a speed ratio, as PERFORMANCE.md
// defines it (the baseline's time over RDMA's), so that above 1 RDMA is faster on
// every row: RDMA's figure over TCP's for a rate (a unit ending in "/s"), TCP's over
// RDMA's for a time. "-" when either figure is missing.
func row(name string, size int, v, tcp float64, unit string) string {
	sz := fmt.Sprintf("%d B", size)
	if size >= 1024 {
		sz = fmt.Sprintf("%d KiB", size>>10)
	}
	ratio := "-"
	ts := "-"
	if tcp > 0 {
		ts = fmt.Sprintf("%.1f %s", tcp, unit)
		switch {
		case strings.HasSuffix(unit, "/s"):
			ratio = fmt.Sprintf("%.2f", v/tcp)
		case v > 0:
			ratio = fmt.Sprintf("%.2f", tcp/v)
		}
	}
	return fmt.Sprintf("%-16s %9s %16s %16s %8s\n", name, sz, fmt.Sprintf("%.1f %s", v, unit), ts, ratio)
}

// next waits for one completion and checks it.
func (c *client) next() (verbs.Completion, error) {
	for {
		n, err := c.cq.Poll(c.wc)
		if err != nil {
			return verbs.Completion{}, err
		}
		if n == 1 {
			if c.wc[0].Status != verbs.StatusSuccess {
				return c.wc[0], fmt.Errorf("completion %v %v: %w", c.wc[0].Opcode, c.wc[0].Status, c.wc[0].Err)
			}
			return c.wc[0], nil
		}
		if err := c.cq.Wait(c.ctx); err != nil {
			return verbs.Completion{}, err
		}
	}
}

// bandwidth keeps two groups of operations of size bytes in flight until
// the time or iteration budget is spent, and returns MB/s. Each group's last
// operation is signalled (Write, Read) or asks the server for an ack (Send),
// and a new group is posted as soon as one completes. Two groups of Sends
// never exceed the server's posted receives; two groups of Reads never
// exceed ORD.
func (c *client) bandwidth(op verbs.SendOp, size int) (float64, error) {
	wr := verbs.SendWR{Op: op, SGL: []verbs.SGE{{MR: c.mr, Length: size}}, RemoteSTag: c.stag, RemoteTO: c.to}
	group := window
	if op == verbs.OpRead {
		group = max(1, min(group, c.ord/2))
	}
	post := func() error {
		if op == verbs.OpSend {
			if err := c.qp.PostRecv(&c.recvWR); err != nil {
				return err
			}
		}
		for i := 0; i < group; i++ {
			wr.Flags = 0
			if op == verbs.OpSend {
				wr.SGL[0].Offset = 0 // 'B'
				if i == group-1 {
					wr.SGL[0].Offset = regionSize // 'A'
				}
			} else if i == group-1 {
				wr.Flags = verbs.Signaled
			}
			if err := c.qp.PostSend(&wr); err != nil {
				return err
			}
		}
		return nil
	}
	start := time.Now()
	inflight, done := 0, 0
	for time.Since(start) < roundDuration() && done < *maxIters {
		for inflight < 2 {
			if err := post(); err != nil {
				return 0, err
			}
			inflight++
		}
		if _, err := c.next(); err != nil { // a group's last Write/Read, or its ack
			return 0, err
		}
		inflight--
		done += group
	}
	el := time.Since(start)
	for ; inflight > 0; inflight-- {
		if _, err := c.next(); err != nil {
			return 0, err
		}
	}
	return float64(done) * float64(size) / el.Seconds() / 1e6, nil
}

// latency measures Send/Recv ping-pong round trips and returns the median
// in microseconds.
func (c *client) latency(size int) (float64, error) {
	wr := verbs.SendWR{Op: verbs.OpSend, SGL: []verbs.SGE{{MR: c.mr, Offset: 2 * regionSize, Length: size}}}
	var samples []time.Duration
	// One clock reading per round trip: its end is the next one's start
	// (reading the clock is a system call on some clock sources).
	start := time.Now()
	t0 := start
	for t0.Sub(start) < roundDuration() && len(samples) < *maxIters {
		if err := c.qp.PostRecv(&c.recvWR); err != nil {
			return 0, err
		}
		if err := c.qp.PostSend(&wr); err != nil {
			return 0, err
		}
		if _, err := c.next(); err != nil {
			return 0, err
		}
		t1 := time.Now()
		samples = append(samples, t1.Sub(t0))
		t0 = t1
	}
	return median(samples), nil
}

// median returns the median of s in microseconds.
func median(s []time.Duration) float64 {
	us := make([]float64, len(s))
	for i, d := range s {
		us[i] = float64(d) / float64(time.Microsecond)
	}
	return benchio.Median(us)
}

func tcpCmd(c net.Conn, op byte, total uint64, chunk int) error {
	var cmd [13]byte
	cmd[0] = op
	binary.BigEndian.PutUint64(cmd[1:], total)
	binary.BigEndian.PutUint32(cmd[9:], uint32(chunk))
	_, err := c.Write(cmd[:])
	return err
}

// tcpBandwidth streams size-byte writes ('W': client to server, one 1-byte
// ack per group) or reads ('R': server to client) for the time budget, with
// two groups of window chunks in flight like the iWARP measurement; 0 when
// unavailable.
func tcpBandwidth(c net.Conn, op byte, size int) float64 {
	if c == nil {
		return 0
	}
	buf := make([]byte, size)
	group := uint64(window)
	n := group * uint64(size)
	issue := func() error {
		if err := tcpCmd(c, op, n, size); err != nil {
			return err
		}
		if op == 'W' {
			for i := uint64(0); i < group; i++ {
				if _, err := c.Write(buf); err != nil {
					return err
				}
			}
		}
		return nil
	}
	finish := func() error {
		if op == 'W' {
			_, err := io.ReadFull(c, buf[:1])
			return err
		}
		for i := uint64(0); i < group; i++ {
			if _, err := io.ReadFull(c, buf); err != nil {
				return err
			}
		}
		return nil
	}
	var total uint64
	inflight := 0
	start := time.Now()
	for time.Since(start) < roundDuration() && total/uint64(size) < uint64(*maxIters) {
		for inflight < 2 {
			if err := issue(); err != nil {
				return 0
			}
			inflight++
		}
		if err := finish(); err != nil {
			return 0
		}
		inflight--
		total += n
	}
	el := time.Since(start)
	for ; inflight > 0; inflight-- {
		if finish() != nil {
			return 0
		}
	}
	return float64(total) / el.Seconds() / 1e6
}

// tcpLatency measures TCP ping-pong round trips of size bytes.
func tcpLatency(c net.Conn, size int) float64 {
	if c == nil {
		return 0
	}
	// The server echoes a fixed count; size it from a short probe so the
	// round takes about roundDuration.
	iters := 50
	if err := tcpCmd(c, 'P', uint64(iters), size); err != nil {
		return 0
	}
	buf := make([]byte, size)
	probe := time.Now()
	for i := 0; i < iters; i++ {
		c.Write(buf)
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0
		}
	}
	per := time.Since(probe) / time.Duration(iters)
	iters = int(min(int64(roundDuration()/max(per, time.Microsecond)), int64(*maxIters)))
	iters = max(iters, 10)
	if err := tcpCmd(c, 'P', uint64(iters), size); err != nil {
		return 0
	}
	samples := make([]time.Duration, 0, iters)
	for i := 0; i < iters; i++ {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return 0
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0
		}
		samples = append(samples, time.Since(t0))
	}
	return median(samples)
}

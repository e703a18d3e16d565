//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsclient"
)

// benchCase is one measurement.
type benchCase struct {
	op    string // "READ" or "WRITE"
	size  int    // bytes per call
	qd    int    // calls in flight
	proto string // "rdma" or "tcp"
}

func (c benchCase) String() string {
	return fmt.Sprintf("%-5s %8s qd %-2d over %s", c.op, sizeName(c.size), c.qd, c.proto)
}

// benchResult is a finished measurement: the median of its rounds.
type benchResult struct {
	benchCase
	rounds []float64 // calls per second of each round, sorted
	cpu    []float64 // the client's CPU seconds per call, each round's
	srvCPU []float64 // the server's (-server-metrics), each round's; nil without
}

// roundStat is what one round measured.
type roundStat struct {
	iops   float64 // calls per second
	cpu    float64 // the client process's CPU seconds per call
	srvCPU float64 // the server's CPU seconds per call (with a serverProbe)
}

// iops is the median round's calls per second.
func (r benchResult) iops() float64 { return benchio.Median(r.rounds) }

// cpuMicros returns the median of the rounds' CPU time per call in µs.
func cpuMicros(rounds []float64) float64 { return benchio.Median(rounds) * 1e6 }

func (r benchResult) mbps() float64 { return r.iops() * float64(r.size) / 1e6 }

// benchOptions bound and select the measurements.
type benchOptions struct {
	duration time.Duration // per case, split over its rounds
	rounds   int           // per case; the median is reported
	maxOps   int64         // per round
	fileSize int64
	ops      []string
	sizes    []int
	qds      []int
	protos   []string
}

// Bounds on the bench flags, so a run always ends in bounded time and memory.
const (
	maxBenchDuration = time.Minute
	maxBenchQD       = 256
	maxBenchRounds   = 100
	maxBenchFile     = 1 << 30
)

// sizeName prints 4096 as "4 KiB" and 1048576 as "1 MiB".
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// parseSize parses 4096, 4k, 4KiB, 1m, 1MiB.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, suf.s) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, suf.s)), suf.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > 1<<40/mult {
		return 0, fmt.Errorf("%q is not a size (e.g. 4096, 4k, 1MiB)", s)
	}
	return n * mult, nil
}

// parseList splits a comma-separated flag value.
func parseList(flagName, v string, each func(string) error) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("-%s: empty list", flagName)
	}
	for _, item := range strings.Split(v, ",") {
		if err := each(strings.TrimSpace(item)); err != nil {
			return fmt.Errorf("-%s %q: %w", flagName, v, err)
		}
	}
	return nil
}

// parseBenchOptions checks the bench flags.
func parseBenchOptions(duration time.Duration, rounds int, maxOps int64, fileSize, ops, sizes, qds string, protos []string, maxIO int) (benchOptions, error) {
	o := benchOptions{duration: duration, rounds: rounds, maxOps: maxOps, protos: protos}
	if duration <= 0 || duration > maxBenchDuration {
		return o, fmt.Errorf("-duration %v: want more than 0 and at most %v per measurement", duration, maxBenchDuration)
	}
	if rounds < 1 || rounds > maxBenchRounds {
		return o, fmt.Errorf("-rounds %d: want 1 to %d", rounds, maxBenchRounds)
	}
	if maxOps <= 0 {
		return o, fmt.Errorf("-max-ops %d: must be positive", maxOps)
	}
	fs, err := parseSize(fileSize)
	if err != nil {
		return o, fmt.Errorf("-file-size: %w", err)
	}
	if fs > maxBenchFile {
		return o, fmt.Errorf("-file-size %s: at most %s", fileSize, sizeName(maxBenchFile))
	}
	o.fileSize = fs
	if err := parseList("ops", ops, func(s string) error {
		switch strings.ToUpper(s) {
		case "READ", "WRITE":
			o.ops = append(o.ops, strings.ToUpper(s))
			return nil
		}
		return fmt.Errorf("%q: want read or write", s)
	}); err != nil {
		return o, err
	}
	if err := parseList("sizes", sizes, func(s string) error {
		n, err := parseSize(s)
		if err != nil {
			return err
		}
		if n > int64(maxIO) {
			return fmt.Errorf("%s exceeds the largest READ/WRITE, %s", s, sizeName(maxIO))
		}
		if n > o.fileSize {
			return fmt.Errorf("%s exceeds -file-size %s", s, sizeName(int(o.fileSize)))
		}
		o.sizes = append(o.sizes, int(n))
		return nil
	}); err != nil {
		return o, err
	}
	if err := parseList("qd", qds, func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxBenchQD {
			return fmt.Errorf("%q: want a queue depth from 1 to %d", s, maxBenchQD)
		}
		o.qds = append(o.qds, n)
		return nil
	}); err != nil {
		return o, err
	}
	return o, nil
}

// benchFile creates the file the measurements use in dir and fills it, so READs of
// any offset find data. remove deletes it. The file's mode is 0644, what a server
// gives a new file under the usual umask, because some servers cannot set a mode
// (willscott/go-nfs over a billy osfs fails a CREATE whose mode differs).
func benchFile(ctx context.Context, c *nfsclient.Client, dir nfs3.FH, size int64) (fh nfs3.FH, remove func(), err error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	name := ".nfsrdma-bench-" + hex.EncodeToString(rnd[:])
	fh, _, err = c.Create(ctx, dir, name, 0o644, false)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the bench file: %w", err)
	}
	remove = func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Remove(rctx, dir, name)
	}
	chunk := make([]byte, c.MaxWrite())
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for off := int64(0); off < size; {
		n := min(int64(len(chunk)), size-off)
		w, err := c.Write(ctx, fh, uint64(off), chunk[:n], nfs3.Unstable)
		if err == nil && w.Count == 0 {
			err = fmt.Errorf("WRITE at %d made no progress", off)
		}
		if err != nil {
			remove()
			return nil, nil, fmt.Errorf("filling the bench file: %w", err)
		}
		off += int64(w.Count)
	}
	if _, err := c.Commit(ctx, fh); err != nil {
		remove()
		return nil, nil, fmt.Errorf("filling the bench file: %w", err)
	}
	return fh, remove, nil
}

// measureRound runs one round of a case against fh, for its share of the duration or
// until the op count runs out, and returns its calls per second and the CPU time per
// call of this process and, with a probe, of the server, whose count of the calls
// answered over the case's transport it also checks.
func measureRound(ctx context.Context, c *nfsclient.Client, fh nfs3.FH, bc benchCase, o *benchOptions, bufs [][]byte, probe *serverProbe) (roundStat, error) {
	slots := o.fileSize / int64(bc.size)
	var before serverSample
	if probe != nil {
		var err error
		if before, err = probe.sample(ctx); err != nil {
			return roundStat{}, err
		}
	}
	cpu0 := benchio.ProcessCPU()
	done, el, err := benchio.Loop(ctx, bufs, o.maxOps, o.duration/time.Duration(o.rounds), func(ctx context.Context, i int, buf []byte) error {
		off := uint64((int64(i) % slots) * int64(bc.size))
		if bc.op == "READ" {
			_, _, err := c.Read(ctx, fh, off, buf)
			return err
		}
		_, err := c.Write(ctx, fh, off, buf, nfs3.Unstable)
		return err
	})
	cpu := benchio.ProcessCPU() - cpu0
	if err != nil {
		return roundStat{}, fmt.Errorf("%v: %w", bc, err)
	}
	if el <= 0 || done == 0 {
		return roundStat{}, nil
	}
	st := roundStat{iops: float64(done) / el.Seconds(), cpu: cpu.Seconds() / float64(done)}
	if probe != nil {
		after, err := probe.sample(ctx)
		if err != nil {
			return roundStat{}, err
		}
		if err := checkTransport(before, after, bc.proto, done, bc.qd); err != nil {
			return roundStat{}, fmt.Errorf("%v: %w", bc, err)
		}
		st.srvCPU = (after.cpu - before.cpu) / float64(done)
	}
	return st, nil
}

// runBenchCases measures every case in -rounds rounds, alternating between the
// transports round by round so that other load on the machine affects each alike,
// printing a line per case with the median round as it finishes, then the summary
// table of medians.
func runBenchCases(ctx context.Context, w io.Writer, clients map[string]*nfsclient.Client, files map[string]nfs3.FH, o *benchOptions, probe *serverProbe) ([]benchResult, error) {
	var results []benchResult
	n, total := 0, len(o.ops)*len(o.sizes)*len(o.qds)*len(o.protos)
	for _, op := range o.ops {
		for _, size := range o.sizes {
			for _, qd := range o.qds {
				bufs := benchio.Buffers(qd, size) // the case's rounds share them
				group := make([]benchResult, len(o.protos))
				for i, p := range o.protos {
					group[i].benchCase = benchCase{op, size, qd, p}
				}
				for range o.rounds {
					for i := range group {
						st, err := measureRound(ctx, clients[group[i].proto], files[group[i].proto], group[i].benchCase, o, bufs, probe)
						if err != nil {
							return results, err
						}
						group[i].rounds = append(group[i].rounds, st.iops)
						group[i].cpu = append(group[i].cpu, st.cpu)
						if probe != nil {
							group[i].srvCPU = append(group[i].srvCPU, st.srvCPU)
						}
					}
				}
				for _, r := range group {
					n++
					med := r.iops() // sorts the rounds
					srv := ""
					if r.srvCPU != nil {
						srv = fmt.Sprintf(", server %.1f", cpuMicros(r.srvCPU))
					}
					fmt.Fprintf(w, "[%2d/%d] %-30v  median of %d rounds %9.1f MB/s %9.0f IOPS  (rounds %.0f to %.0f IOPS; CPU µs per call: client %.1f%s)\n",
						n, total, r.benchCase, len(r.rounds), r.mbps(), med, r.rounds[0], r.rounds[len(r.rounds)-1], cpuMicros(r.cpu), srv)
				}
				results = append(results, group...)
			}
		}
	}
	printBenchTable(w, results, o.protos, probe != nil)
	return results, nil
}

// printBenchTable prints one row per (op, size, qd) with the median MB/s, IOPS and
// client CPU µs per call per transport (and the server's, with srv), and, when both
// ran, RDMA's throughput as a multiple of TCP's.
func printBenchTable(w io.Writer, results []benchResult, protos []string, srv bool) {
	type key struct {
		op       string
		size, qd int
	}
	byKey := map[key]map[string]benchResult{}
	var order []key
	for _, r := range results {
		k := key{r.op, r.size, r.qd}
		if byKey[k] == nil {
			byKey[k] = map[string]benchResult{}
			order = append(order, k)
		}
		byKey[k][r.proto] = r
	}
	both := len(protos) == 2
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w)
	hdr := "op\tsize\tqd\t"
	for _, p := range protos {
		hdr += p + " MB/s\t" + p + " IOPS\t" + p + " cpu µs\t"
		if srv {
			hdr += p + " srv µs\t"
		}
	}
	if both {
		hdr += "rdma/tcp\t"
	}
	fmt.Fprintln(tw, hdr)
	for _, k := range order {
		row := fmt.Sprintf("%s\t%s\t%d\t", k.op, sizeName(k.size), k.qd)
		for _, p := range protos {
			r, ok := byKey[k][p]
			switch {
			case ok:
				row += fmt.Sprintf("%.1f\t%.0f\t%.1f\t", r.mbps(), r.iops(), cpuMicros(r.cpu))
			default:
				row += "-\t-\t-\t"
			}
			if srv {
				if ok && r.srvCPU != nil {
					row += fmt.Sprintf("%.1f\t", cpuMicros(r.srvCPU))
				} else {
					row += "-\t"
				}
			}
		}
		if both {
			rd, ok1 := byKey[k]["rdma"]
			tc, ok2 := byKey[k]["tcp"]
			if ok1 && ok2 && tc.mbps() > 0 {
				row += fmt.Sprintf("%.2fx\t", rd.mbps()/tc.mbps())
			} else {
				row += "-\t"
			}
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		duration                      time.Duration
		rounds                        int
		maxOps                        int64
		fileSize, ops, sizes, qdsFlag string
		plot, serverMetrics           string
	)
	ctx, cancel, f, pos, err := startCommand(ctx, "bench", args, 1, stderr, func(fs *flagSet) {
		fs.DurationVar(&duration, "duration", 2*time.Second, "time per measurement, split over -rounds (at most 1m)")
		fs.IntVar(&rounds, "rounds", 5, "rounds per measurement, alternating between transports; medians are reported")
		fs.Int64Var(&maxOps, "max-ops", 1_000_000, "calls per round at most")
		fs.StringVar(&fileSize, "file-size", "64MiB", "size of the file read and written")
		fs.StringVar(&ops, "ops", "read,write", "operations to measure")
		fs.StringVar(&sizes, "sizes", "4KiB,1MiB", "call sizes")
		fs.StringVar(&qdsFlag, "qd", "1,32", "queue depths (calls in flight)")
		fs.StringVar(&plot, "plot", "", "also draw IOPS and MB/s against queue depth per transport into `FILE.svg`")
		fs.StringVar(&serverMetrics, "server-metrics", "", "the server's Prometheus `URL` (nfsrdmad -metrics, e.g. http://HOST:9100/metrics): also report its CPU time per call (its counter counts in 10 ms steps: rounds should last far longer), and check that each round's calls arrived over the transport measured")
	})
	if err != nil {
		return err
	}
	defer cancel()
	r, err := parseRemote(pos[0])
	if err != nil {
		return err
	}
	protos := []string{f.proto}
	if f.proto == "both" {
		protos = []string{"rdma", "tcp"}
	}
	// Check the flags before connecting; sizes are checked against the server's
	// transfer size below.
	if _, err := parseBenchOptions(duration, rounds, maxOps, fileSize, ops, sizes, qdsFlag, protos, nfs3.MaxData); err != nil {
		return err
	}
	if plot != "" {
		if err := checkPlotPath(plot); err != nil {
			return err
		}
	}
	var probe *serverProbe
	if serverMetrics != "" {
		if probe, err = newServerProbe(serverMetrics); err != nil {
			return err
		}
	}
	clients := map[string]*nfsclient.Client{}
	files := map[string]nfs3.FH{}
	var dirFH nfs3.FH
	var first *session
	for _, p := range protos {
		s, err := mount(ctx, f, p, r)
		if err != nil {
			return err
		}
		defer s.Close()
		if first == nil {
			first = s
			fh, attr, err := s.lookup(ctx, s.rel)
			if err != nil {
				return err
			}
			if attr.Type != nfs3.TypeDir {
				return fmt.Errorf("%s: not a directory (bench needs a directory to create its file in)", r)
			}
			dirFH = fh
		}
		clients[p] = s.c
	}
	maxIO := first.c.MaxRead()
	for _, c := range clients {
		maxIO = min(maxIO, c.MaxRead(), c.MaxWrite())
	}
	o, err := parseBenchOptions(duration, rounds, maxOps, fileSize, ops, sizes, qdsFlag, protos, maxIO)
	if err != nil {
		return err
	}
	if first.unlisted != "" {
		fmt.Fprintf(stdout, "bench %s: mounted %s as it is (%s)\n", r, first.export, first.unlisted)
	}
	fmt.Fprintf(stdout, "bench %s: %s file, %v per measurement in %d rounds (medians), at most %d calls per round\n", r, sizeName(int(o.fileSize)), o.duration, o.rounds, o.maxOps)
	fh, remove, err := benchFile(ctx, first.c, dirFH, o.fileSize)
	if err != nil {
		return err
	}
	defer remove()
	for _, p := range protos {
		files[p] = fh
	}
	if probe != nil {
		if _, err := probe.sample(ctx); err != nil {
			return err
		}
	}
	results, err := runBenchCases(ctx, stdout, clients, files, &o, probe)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (raise -timeout)", err)
	}
	if err == nil && plot != "" {
		if err = saveBenchPlot(plot, results); err == nil {
			fmt.Fprintf(stdout, "plot: %s\n", plot)
		}
	}
	return err
}

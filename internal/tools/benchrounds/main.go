// Command benchrounds runs Go test binaries' benchmarks in interleaved rounds and
// reports, per binary, the median of every metric and of per-round ratios between
// benchmarks, with their ranges: how PERFORMANCE.md's figures are measured. A ratio
// taken within one round compares rows that ran a few seconds apart, which this
// machine's minute-to-minute swings would otherwise swamp; interleaving two builds
// (the old one from a git worktree) compares them under the same swings.
//
// Usage:
//
//	go test -c -o /tmp/new/rp.test ./rpcrdma
//	git worktree add /tmp/oldtree REV && (cd /tmp/oldtree && go test -c -o /tmp/old/rp.test ./rpcrdma)
//	go run ./internal/tools/benchrounds -dir rpcrdma -rounds 10 \
//	    -bench 'TransportConns4K/(rdma-soft|oncrpc-tcp)/conns=(1|64)$' -benchtime 20000x \
//	    -ratio 'growth=TransportConns4K/rdma-soft/conns=64/TransportConns4K/rdma-soft/conns=1/TransportConns4K/oncrpc-tcp/conns=64/TransportConns4K/oncrpc-tcp/conns=1@calls/s' \
//	    old=/tmp/old/rp.test new=/tmp/new/rp.test
//
// A ratio is label=A/B@metric, the metric of benchmark A divided by B's, or
// label=A/B/C/D@metric, (A/B)/(C/D). Benchmark names are given without the
// "Benchmark" prefix and the -GOMAXPROCS suffix; a name may itself contain slashes,
// so the spec is split at the "/" that precede names of benchmarks the round ran.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/internal/benchio"
)

// result is one benchmark line: its metrics by unit.
type result map[string]float64

// round is what one binary's run of the benchmarks printed, by benchmark name.
type round map[string]result

// parseLine parses a line of the Go benchmark format ("BenchmarkX-2  N  v unit  v
// unit ..."), returning the name without prefix and -GOMAXPROCS suffix; ok is false
// for any other line.
func parseLine(line string) (name string, r result, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return "", nil, false
	}
	if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
		return "", nil, false
	}
	name = strings.TrimPrefix(f[0], "Benchmark")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	r = result{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false
		}
		r[f[i+1]] = v
	}
	return name, r, true
}

// parseRound reads a binary's output.
func parseRound(out io.Reader) (round, error) {
	rd := round{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if name, r, ok := parseLine(sc.Text()); ok {
			rd[name] = r
		}
	}
	return rd, sc.Err()
}

// ratio is a -ratio flag: terms[0]/terms[1], or (terms[0]/terms[1])/(terms[2]/terms[3]).
type ratio struct {
	label, metric string
	spec          string // the names, still to be split against a round's benchmarks
}

// parseRatio parses label=NAMES@metric.
func parseRatio(s string) (ratio, error) {
	label, rest, ok := strings.Cut(s, "=")
	if !ok || label == "" {
		return ratio{}, fmt.Errorf("ratio %q: want label=A/B@metric", s)
	}
	i := strings.LastIndexByte(rest, '@')
	if i <= 0 || i == len(rest)-1 {
		return ratio{}, fmt.Errorf("ratio %q: want label=A/B@metric", s)
	}
	return ratio{label: label, spec: rest[:i], metric: rest[i+1:]}, nil
}

// terms splits the ratio's names against the benchmarks of rd: the spec is the names
// joined by "/", each a benchmark rd holds. It returns an error naming the spec when
// no split into 2 or 4 such names exists.
func (q ratio) terms(rd round) ([]string, error) {
	var split func(s string, acc []string) []string
	split = func(s string, acc []string) []string {
		if _, ok := rd[s]; ok && (len(acc) == 1 || len(acc) == 3) {
			return append(slices.Clone(acc), s)
		}
		for i := 0; i < len(s); i++ {
			if s[i] != '/' {
				continue
			}
			if _, ok := rd[s[:i]]; !ok {
				continue
			}
			if t := split(s[i+1:], append(acc, s[:i])); t != nil {
				return t
			}
		}
		return nil
	}
	t := split(q.spec, nil)
	if t == nil {
		return nil, fmt.Errorf("ratio %s: %q is not 2 or 4 benchmarks of the round joined by /", q.label, q.spec)
	}
	return t, nil
}

// value computes the ratio in round rd.
func (q ratio) value(rd round) (float64, error) {
	t, err := q.terms(rd)
	if err != nil {
		return 0, err
	}
	v := make([]float64, len(t))
	for i, name := range t {
		x, ok := rd[name][q.metric]
		if !ok {
			return 0, fmt.Errorf("ratio %s: benchmark %s reports no %s", q.label, name, q.metric)
		}
		v[i] = x
	}
	r := v[0] / v[1]
	if len(v) == 4 {
		r /= v[2] / v[3]
	}
	return r, nil
}

// ratioFlags collects repeated -ratio flags.
type ratioFlags []ratio

func (f *ratioFlags) String() string { return fmt.Sprint(len(*f), " ratios") }

func (f *ratioFlags) Set(s string) error {
	q, err := parseRatio(s)
	if err != nil {
		return err
	}
	*f = append(*f, q)
	return nil
}

// binary is a name=path argument.
type binary struct{ name, path string }

// summary formats the median of v and its range.
func summary(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s [%s–%s]", num(benchio.Median(v)), num(slices.Min(v)), num(slices.Max(v)))
}

// num formats v with three significant digits, or as a whole number from 1000 on.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchrounds:", err)
		os.Exit(1)
	}
}

// run is the command, with its arguments and outputs.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchrounds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "directory to run the binaries in (their package's, for its testdata)")
	bench := fs.String("bench", ".", "benchmarks to run (-test.bench)")
	benchtime := fs.String("benchtime", "", "-test.benchtime, e.g. 20000x")
	rounds := fs.Int("rounds", 5, "rounds; each runs every binary once, in the order given")
	var ratios ratioFlags
	fs.Var(&ratios, "ratio", "label=A/B@metric or label=A/B/C/D@metric ((A/B)/(C/D)), per round (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchrounds [flags] name=test-binary ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	var bins []binary
	for _, a := range fs.Args() {
		name, path, ok := strings.Cut(a, "=")
		if !ok || name == "" || path == "" {
			return fmt.Errorf("argument %q: want name=path-to-test-binary", a)
		}
		bins = append(bins, binary{name, path})
	}
	if len(bins) == 0 || *rounds < 1 {
		fs.Usage()
		return errors.New("no binaries, or no rounds")
	}
	targs := []string{"-test.run", "^$", "-test.bench", *bench}
	if *benchtime != "" {
		targs = append(targs, "-test.benchtime", *benchtime)
	}
	all := make([][]round, len(bins)) // by binary, by round
	for r := 1; r <= *rounds; r++ {
		for i, b := range bins {
			var out bytes.Buffer
			cmd := exec.CommandContext(ctx, b.path, targs...)
			cmd.Dir, cmd.Stdout, cmd.Stderr = *dir, &out, stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("round %d, %s: %w", r, b.name, err)
			}
			rd, err := parseRound(&out)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r, b.name, err)
			}
			if len(rd) == 0 {
				return fmt.Errorf("round %d, %s: no benchmark matched %q", r, b.name, *bench)
			}
			if r == 1 {
				// A ratio naming a benchmark the run does not have fails now, not
				// after every round.
				for _, q := range ratios {
					if _, err := q.value(rd); err != nil {
						return fmt.Errorf("%s: %w", b.name, err)
					}
				}
			}
			all[i] = append(all[i], rd)
			fmt.Fprintf(stderr, "round %d/%d: %s done\n", r, *rounds, b.name)
		}
	}
	return report(stdout, bins, all, ratios)
}

// report prints every binary's medians and ratios.
func report(w io.Writer, bins []binary, all [][]round, ratios []ratio) error {
	for i, b := range bins {
		fmt.Fprintf(w, "== %s (%d rounds)\n", b.name, len(all[i]))
		names := map[string]bool{}
		for _, rd := range all[i] {
			for n := range rd {
				names[n] = true
			}
		}
		for _, n := range slices.Sorted(maps.Keys(names)) {
			units := map[string][]float64{}
			for _, rd := range all[i] {
				for u, v := range rd[n] {
					units[u] = append(units[u], v)
				}
			}
			var parts []string
			for _, u := range slices.Sorted(maps.Keys(units)) {
				parts = append(parts, fmt.Sprintf("%s %s", u, summary(units[u])))
			}
			fmt.Fprintf(w, "%s: %s\n", n, strings.Join(parts, ", "))
		}
		for _, q := range ratios {
			var v []float64
			for _, rd := range all[i] {
				x, err := q.value(rd)
				if err != nil {
					return err
				}
				v = append(v, x)
			}
			fmt.Fprintf(w, "ratio %s (%s): %s\n", q.label, q.metric, summary(v))
		}
	}
	return nil
}

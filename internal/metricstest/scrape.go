// Package metricstest helps tests check a -metrics endpoint: Scrape reads the text
// exposition into a map, and SendBadVersion plays a hostile RPC-over-RDMA client
// whose call carries the wrong version.
package metricstest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Series maps a series, written as the exposition writes it (name{l1="v1",l2="v2"}
// with labels sorted by name but a histogram's "le" last, or the bare name), to its
// value.
type Series map[string]float64

// Scrape fetches url (an endpoint's /metrics) and parses its text exposition.
func Scrape(ctx context.Context, url string) (Series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scrape %s: %s: %s", url, resp.Status, b)
	}
	return Parse(resp.Body)
}

// Parse reads a text exposition.
func Parse(r io.Reader) (Series, error) {
	s := make(Series)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("exposition line %d: no value: %q", n, line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("exposition line %d: value: %w", n, err)
		}
		s[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("exposition: %w", err)
	}
	return s, nil
}

// Key writes the series of name with labels given as name, value pairs, in the
// exposition's form.
func Key(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	pairs := make([]string, 0, len(labels)/2)
	le := ""
	for i := 0; i+1 < len(labels); i += 2 {
		p := labels[i] + "=" + strconv.Quote(labels[i+1])
		if labels[i] == "le" {
			le = p
			continue
		}
		pairs = append(pairs, p)
	}
	sort.Strings(pairs)
	if le != "" {
		pairs = append(pairs, le)
	}
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// Get returns the value of name with labels (name, value pairs) and whether the
// series exists.
func (s Series) Get(name string, labels ...string) (float64, bool) {
	v, ok := s[Key(name, labels...)]
	return v, ok
}

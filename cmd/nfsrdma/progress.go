//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows a transfer's progress on one terminal line, redrawn every interval,
// and erases it when done. It shows nothing when its writer is not a terminal, so
// logs and pipes stay clean.
type progress struct {
	w        io.Writer
	what     string
	total    int64
	done     atomic.Int64
	start    time.Time
	stop     chan struct{}
	finished sync.WaitGroup
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// startProgress starts showing the progress of a transfer of total bytes on w when w
// is a terminal (or always, with force); add counts bytes and end stops it.
func startProgress(w io.Writer, what string, total int64, interval time.Duration, force bool) *progress {
	p := &progress{w: w, what: what, total: total, start: time.Now(), stop: make(chan struct{})}
	if !force && !isTerminal(w) {
		return p
	}
	p.finished.Add(1)
	go func() {
		defer p.finished.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprint(p.w, "\r\033[K"+p.line())
			}
		}
	}()
	return p
}

// line formats the current state; a negative total is unknown (a stream).
func (p *progress) line() string {
	n := p.done.Load()
	if p.total < 0 {
		return fmt.Sprintf("%s: %.1f MiB %s", p.what, float64(n)/(1<<20), rate(n, time.Since(p.start)))
	}
	pct := 100.0
	if p.total > 0 {
		pct = float64(n) * 100 / float64(p.total)
	}
	return fmt.Sprintf("%s: %.1f / %.1f MiB (%.0f%%) %s", p.what, float64(n)/(1<<20), float64(p.total)/(1<<20), pct, rate(n, time.Since(p.start)))
}

// add counts n more bytes moved.
func (p *progress) add(n int) { p.done.Add(int64(n)) }

// end stops the display and erases its line.
func (p *progress) end() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.finished.Wait()
}

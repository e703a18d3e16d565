package oncrpc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestMonitorNotRespondingThenOK calls a server whose procedure stalls until the
// Monitor has said the server is not responding: the Client retransmits, the server
// resumes, and the Monitor says it is OK again. The per-try timeout is short, but
// nothing depends on timing: the server answers only after the first notification.
func TestMonitorNotRespondingThenOK(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	_, addr := startTCPServer(t, nil, Procs{
		procEcho: func(ctx context.Context, req *Request, res *xdr.Encoder) error {
			<-release
			b, err := req.Args.Opaque(-1)
			res.Opaque(b)
			return err
		},
	})
	tr, err := DialTCP(context.Background(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var mu sync.Mutex
	var events []bool
	m := NewMonitor(func(ok bool) {
		mu.Lock()
		events = append(events, ok)
		mu.Unlock()
		if !ok {
			once.Do(func() { close(release) })
		}
	})
	c := NewClient(tr, testProg, testVers, WithMonitor(m), WithRetry(RetryPolicy{Timeout: 5 * time.Millisecond, MaxTries: 1 << 20}))
	// A second Client sharing the Monitor (as MOUNT and NFS do) reports to it too.
	c2 := NewClient(tr, testProg, testVers, WithMonitor(m))
	var res bytesRes
	if err := c.Call(context.Background(), procEcho, bytesArg("still there"), &res); err != nil {
		t.Fatal(err)
	}
	if string(res.b) != "still there" {
		t.Errorf("result %q", res.b)
	}
	if err := c2.Call(context.Background(), procEcho, bytesArg("x"), &res); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[0] || !events[1] {
		t.Errorf("notifications %v, want [false true] (not responding, then OK)", events)
	}
	if m.NotResponding() {
		t.Error("NotResponding after the server answered")
	}
}

// TestMonitorGivesUp: with a bounded number of tries the call fails with ErrTimeout
// after one "not responding" notification and no "OK".
func TestMonitorGivesUp(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	_, addr := startTCPServer(t, nil, Procs{
		procNull: func(ctx context.Context, req *Request, res *xdr.Encoder) error {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil
		},
	})
	tr, err := DialTCP(context.Background(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var events []bool
	m := NewMonitor(func(ok bool) { events = append(events, ok) })
	c := NewClient(tr, testProg, testVers, WithMonitor(m), WithRetry(RetryPolicy{Timeout: time.Millisecond, MaxTries: 3}))
	err = c.Call(context.Background(), procNull, nil, nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("call: %v, want ErrTimeout", err)
	}
	if len(events) != 1 || events[0] || !m.NotResponding() {
		t.Errorf("notifications %v, want [false]", events)
	}
}

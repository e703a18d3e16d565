package oncrpc

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// Replies race with cancellations and per-try timeouts: every Wait returns exactly one
// outcome, a completed call has its reply, and the table ends empty.
func TestPendingCallsRace(t *testing.T) {
	var tab PendingCalls
	const callers, rounds = 16, 200
	replies := make(chan uint32, callers)
	stop := make(chan struct{})
	var replier sync.WaitGroup
	replier.Add(1)
	go func() {
		defer replier.Done()
		for {
			select {
			case xid := <-replies:
				if p := tab.Claim(xid); p != nil {
					p.Reply.Inline = append(p.Reply.Inline[:0], byte(xid), byte(xid>>8))
					p.Complete(nil)
				}
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var reply ClientReply
			for i := 0; i < rounds; i++ {
				xid := uint32(g<<16 | i)
				call := ClientCall{XID: xid}
				if i%3 == 0 {
					call.Timeout = time.Duration(rand.IntN(50)) * time.Microsecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(100))*time.Microsecond)
				p, err := tab.Add(&call, &reply)
				if err != nil {
					t.Error(err)
					cancel()
					return
				}
				if _, err := tab.Add(&call, &reply); !errors.Is(err, ErrDuplicateXID) {
					t.Errorf("duplicate XID accepted: %v", err)
				}
				if rand.IntN(2) == 0 {
					replies <- xid
				}
				err = tab.Wait(ctx, p)
				cancel()
				switch {
				case err == nil:
					if len(reply.Inline) != 2 || reply.Inline[0] != byte(xid) || reply.Inline[1] != byte(xid>>8) {
						t.Errorf("xid %#x: wrong reply %x", xid, reply.Inline)
					}
				case errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrTimeout):
				default:
					t.Errorf("xid %#x: %v", xid, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	replier.Wait()
	if n := tab.Len(); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}

func TestPendingCallsFailAll(t *testing.T) {
	var tab PendingCalls
	boom := errors.New("boom")
	errs := make(chan error, 10)
	var added sync.WaitGroup
	for i := 0; i < 10; i++ {
		added.Add(1)
		go func() {
			call := ClientCall{XID: uint32(i)}
			p, err := tab.Add(&call, &ClientReply{})
			added.Done()
			if err != nil {
				errs <- err
				return
			}
			errs <- tab.Wait(context.Background(), p)
		}()
	}
	added.Wait()
	tab.FailAll(boom)
	for i := 0; i < 10; i++ {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	}
	if tab.Claim(3) != nil || tab.Unmatched() != 1 {
		t.Fatalf("claim after FailAll: unmatched %d", tab.Unmatched())
	}
}

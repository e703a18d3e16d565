package credits_test

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/credits"
)

func ExampleWindow() {
	w := credits.NewWindow(128) // ask for 128 credits
	ctx := context.Background()
	_ = w.Acquire(ctx) // the first call of a connection uses the one initial credit
	fmt.Println("granted", w.Granted())
	w.Update(64) // the reply grants 64
	w.Release()
	fmt.Println("granted", w.Granted())
	w.Update(0) // a zero grant is treated as one
	fmt.Println("granted", w.Granted())
	// Output:
	// granted 1
	// granted 64
	// granted 1
}

func ExampleServer() {
	s := credits.NewServer(credits.Config{Total: 100, PerConn: 64})
	a, b, idle := s.Open(), s.Open(), s.Open()
	defer idle.Close() // open, but it never calls: it does not dilute the others' shares
	a.Arrive(128)      // a call asking for 128 credits
	b.Arrive(10)
	fmt.Println("a:", a.Grant()) // 100 shared by the two active connections
	a.Done()
	fmt.Println("b:", b.Grant())
	b.Done()
	fmt.Println("open:", s.Conns(), "active:", s.Active())
	// Output:
	// a: 50
	// b: 10
	// open: 3 active: 2
}

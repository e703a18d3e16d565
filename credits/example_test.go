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
	a, b := s.Open(), s.Open()
	a.Arrive(128) // a call asking for 128 credits
	fmt.Println("a:", a.Grant())
	a.Done()
	b.Arrive(10)
	fmt.Println("b:", b.Grant())
	b.Done()
	// Output:
	// a: 50
	// b: 10
}

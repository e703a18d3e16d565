package main

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestEchoClientAgainstServer(t *testing.T) {
	ctx := context.Background()
	srv, l, err := serve(ctx, "127.0.0.1:0", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(ctx)
	if err := client(ctx, l.Addr().String(), 10, "test"); err != nil {
		t.Fatal(err)
	}
}

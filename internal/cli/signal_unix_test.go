//go:build unix

package cli

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestSignalContext sends the process SIGINT and sees the context end with it as the
// cause.
func TestSignalContext(t *testing.T) {
	ctx, stop := SignalContext(context.Background())
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	var se *SignalError
	if !errors.As(context.Cause(ctx), &se) || se.Signal != syscall.SIGINT {
		t.Fatalf("cause %v, want SIGINT", context.Cause(ctx))
	}
	if got := ExitCode(ctx, ctx.Err()); got != 130 {
		t.Errorf("exit code %d, want 130", got)
	}
}

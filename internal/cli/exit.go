package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// SignalError is the cause of a context canceled by a signal (see SignalContext).
type SignalError struct {
	Signal os.Signal
}

func (e *SignalError) Error() string {
	switch e.Signal {
	case syscall.SIGINT:
		return "interrupted (SIGINT)"
	case syscall.SIGTERM:
		return "terminated (SIGTERM)"
	}
	return "stopped by signal " + e.Signal.String()
}

// SignalContext returns a context canceled, with a *SignalError as its cause, when
// the process receives SIGINT or SIGTERM. stop releases the signals: a second one
// then ends the process the default way.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			cancel(&SignalError{Signal: sig})
			signal.Stop(ch) // a second Ctrl-C kills at once
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// Exit statuses other than 0 and 1.
const (
	ExitUsage     = 2   // a bad command line
	ExitInterrupt = 130 // 128+SIGINT, as shells report it
	ExitTerminate = 143 // 128+SIGTERM
)

// UsageError marks an error in the command line, which exits with ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitCode is the exit status for a run that ended with err under ctx: 0 for
// success or for -h (flag.ErrHelp); 128+N when signal N canceled ctx (see
// SignalContext) and the run did not succeed; ExitUsage for a *UsageError; else 1.
func ExitCode(ctx context.Context, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var se *SignalError
	if errors.As(err, &se) || errors.As(context.Cause(ctx), &se) {
		if s, ok := se.Signal.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return ExitInterrupt
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	return 1
}

// Report prints err to stderr as "prog: err" unless it is nil or flag.ErrHelp (the
// flag package has printed the usage already), and returns ExitCode(ctx, err).
func Report(ctx context.Context, prog string, err error) int {
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, prog+":", err)
	}
	return ExitCode(ctx, err)
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

func TestVersionOf(t *testing.T) {
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-11-25T10:00:00Z"},
		}}, "(devel) 0123456789ab+dirty 2026-11-25T10:00:00Z"},
		{debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}, "(devel) abc"},
	} {
		if got := versionOf(&tc.bi); got != tc.want {
			t.Errorf("versionOf(%+v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
	if l := VersionLine("prog"); !strings.HasPrefix(l, "prog ") || !strings.Contains(l, " go") {
		t.Errorf("VersionLine = %q", l)
	}
}

func TestExitCode(t *testing.T) {
	bg := context.Background()
	sigint, cancel := context.WithCancelCause(bg)
	cancel(&SignalError{Signal: syscall.SIGINT})
	sigterm, cancel2 := context.WithCancelCause(bg)
	cancel2(&SignalError{Signal: syscall.SIGTERM})
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want int
	}{
		{bg, nil, 0},
		{bg, flag.ErrHelp, 0},
		{bg, fmt.Errorf("ls: %w", flag.ErrHelp), 0},
		{bg, errors.New("boom"), 1},
		{bg, Usagef("-x %d: bad", 3), ExitUsage},
		{bg, fmt.Errorf("wrapped: %w", Usagef("bad")), ExitUsage},
		{sigint, context.Canceled, ExitInterrupt},
		{sigint, nil, 0}, // a server that stopped cleanly on SIGINT
		{sigterm, errors.New("copy: context canceled"), ExitTerminate},
		{bg, fmt.Errorf("x: %w", &SignalError{Signal: syscall.SIGINT}), ExitInterrupt},
	} {
		if got := ExitCode(tc.ctx, tc.err); got != tc.want {
			t.Errorf("ExitCode(cause %v, %v) = %d, want %d", context.Cause(tc.ctx), tc.err, got, tc.want)
		}
	}
}

func TestLogFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var lf LogFlags
	lf.Register(fs, "info")
	if err := fs.Parse([]string{"-log-format", "json", "-log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	l, err := lf.Logger("prog", &buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("connection closed", "remote", "192.0.2.1:5")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("json log line %q: %v", buf.String(), err)
	}
	if m["@message"] != "connection closed" || m["@level"] != "debug" || m["@module"] != "prog" || m["remote"] != "192.0.2.1:5" {
		t.Errorf("json log line %v", m)
	}
	buf.Reset()
	lf = LogFlags{Level: "info", Format: "text"}
	l, _ = lf.Logger("prog", &buf)
	l.Debug("hidden")
	l.Info("shown", "k", 1)
	if s := buf.String(); strings.Contains(s, "hidden") || !strings.Contains(s, "[INFO]  prog: shown: k=1") {
		t.Errorf("text log %q", s)
	}
	for _, bad := range []LogFlags{{Level: "loud", Format: "text"}, {Level: "info", Format: "xml"}} {
		_, err := bad.Logger("p", io.Discard)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%+v: %v, want a usage error", bad, err)
		}
	}
}

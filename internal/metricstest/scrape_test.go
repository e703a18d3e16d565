package metricstest

import (
	"strings"
	"testing"
)

const sample = `# HELP rpcrdma_rpc_calls_total ONC RPC calls.
# TYPE rpcrdma_rpc_calls_total counter
rpcrdma_rpc_calls_total{outcome="success",procedure="read",program="nfs",version="3"} 137609
rpcrdma_rpc_call_duration_seconds_bucket{procedure="read",program="nfs",version="3",le="+Inf"} 5
go_goroutines 12
`

func TestParseAndKey(t *testing.T) {
	s, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Get("rpcrdma_rpc_calls_total", "program", "nfs", "version", "3", "procedure", "read", "outcome", "success"); !ok || v != 137609 {
		t.Errorf("calls: %v %v", v, ok)
	}
	if v, ok := s.Get("rpcrdma_rpc_call_duration_seconds_bucket", "le", "+Inf", "program", "nfs", "version", "3", "procedure", "read"); !ok || v != 5 {
		t.Errorf("bucket: %v %v (key %s)", v, ok, Key("rpcrdma_rpc_call_duration_seconds_bucket", "le", "+Inf", "program", "nfs"))
	}
	if v, ok := s.Get("go_goroutines"); !ok || v != 12 {
		t.Errorf("go_goroutines: %v %v", v, ok)
	}
	for _, bad := range []string{"novalue\n", "x notanumber\n", "x{a=b} 1\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("Parse(%q): %v, want an error naming line 1", bad, err)
		}
	}
}

// Parse takes any input without panicking, and every series it returns has a name.
func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("x 1\n# c\n\ny{a=\"b c\"} 2.5e3\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for k := range s {
			if strings.Contains(k, "\n") {
				t.Fatalf("series %q spans lines", k)
			}
		}
	})
}

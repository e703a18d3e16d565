package exports

import (
	"context"
	"net/netip"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse: it must return a table or an *Error,
// never panic; a table renders to text that parses to the same rendering, and every
// export answers Match.
func FuzzParse(f *testing.F) {
	f.Add([]byte("/srv 10.0.0.0/8(rw) *(ro)\n"))
	f.Add([]byte("\"/a b\" -rw h?.x(no_root_squash,fsid=root) \\\n ::1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse("fuzz", data)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v, want *Error", err, err)
			}
			return
		}
		s := tab.String()
		again, err := Parse("again", []byte(s))
		if err != nil {
			t.Fatalf("rendering %q does not parse: %v", s, err)
		}
		if again.String() != s {
			t.Fatalf("rendering unstable: %q then %q", s, again.String())
		}
		for i := range tab.Exports {
			tab.Exports[i].Match(context.Background(), netip.MustParseAddr("10.1.2.3"), NewNames(nil, 1))
		}
	})
}

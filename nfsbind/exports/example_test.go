package exports_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
)

// Parse a table and find what it grants two callers.
func Example() {
	tab, err := exports.Parse("/etc/exports", []byte(`
/srv/data  10.0.0.0/8(rw) 10.0.0.5(rw,no_root_squash) *(ro)
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	e := &tab.Exports[0]
	for _, ip := range []string{"10.0.0.5", "192.0.2.1"} {
		c := e.Match(context.Background(), netip.MustParseAddr(ip), nil)
		fmt.Println(ip, "->", c.Spec, c.Options)
	}
	_, err = exports.Parse("/etc/exports", []byte("/srv *(rw,no_such_option)\n"))
	fmt.Println(err)
	// Output:
	// 10.0.0.5 -> 10.0.0.5 rw,no_root_squash,no_all_squash,anonuid=65534,anongid=65534,sync,nocrossmnt,secure
	// 192.0.2.1 -> * ro,root_squash,no_all_squash,anonuid=65534,anongid=65534,sync,nocrossmnt,secure
	// /etc/exports:1:11: unknown option "no_such_option"
}

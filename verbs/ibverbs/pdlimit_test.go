//go:build ibverbs && linux && cgo

package ibverbs

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/verbs"
)

// TestPrivateDataSizes connects with request private data of several sizes
// and reports which the device carries; the limit the provider documents
// for the device must work.
func TestPrivateDataSizes(t *testing.T) {
	cfg, addr := testConfig(t)
	d := openTest(t, cfg)
	limit := maxConnectPrivateData(d)
	for _, n := range []int{252, 248, 244, 240, 232, 224, 196, 128, 56} {
		if n > limit && !d.IWARP() {
			continue
		}
		err := tryPrivateData(t, d, addr, n)
		t.Logf("%s: %d bytes of request private data: %v", d.Name(), n, err)
		if n <= limit && err != nil {
			t.Errorf("%d bytes (documented limit %d): %v", n, limit, err)
		}
	}
}

func tryPrivateData(t *testing.T, d *Device, addr string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := d.Listen(ctx, addr+":0")
	if err != nil {
		return err
	}
	defer ln.Close()
	cli, srv := newBend(t, d, 2), newBend(t, d, 2)
	pd := bytes.Repeat([]byte{0xab}, n)
	errc := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			if !bytes.HasPrefix(req.PrivateData(), pd) {
				req.Reject(nil)
				errc <- nil
				return
			}
			_, err = req.Accept(ctx, srv.qp, verbs.ConnParams{})
		}
		errc <- err
	}()
	_, err = d.Dial(ctx, ln.Addr().String(), cli.qp, verbs.ConnParams{PrivateData: pd})
	if err != nil {
		cancel() // the server may never see the request
		<-errc
		return err
	}
	return <-errc
}

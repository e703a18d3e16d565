//go:build linux

package nfsserver

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// The codec's own HMAC is RFC 2104 HMAC-SHA256, so handles issued before it keep
// their MAC: compare with crypto/hmac for keys shorter than, equal to and longer than
// a SHA-256 block.
func TestHandleMACIsHMACSHA256(t *testing.T) {
	body := bytes.Repeat([]byte{0xa5}, handleBody)
	for _, n := range []int{KeySize, sha256.BlockSize, sha256.BlockSize + 1, 100} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(i*7 + n)
		}
		m := hmac.New(sha256.New, key)
		m.Write(body)
		want := m.Sum(nil)[:handleMACLen]
		got := make([]byte, handleMACLen)
		newHandleCodec(key, 1).mac(got, body)
		if !bytes.Equal(got, want) {
			t.Fatalf("key of %d bytes: MAC %x, want %x", n, got, want)
		}
	}
}

// Encoding and decoding a handle allocates nothing: every call decodes one.
func TestHandleCodecAllocs(t *testing.T) {
	c := newHandleCodec(fuzzKey, 99)
	id := handleID{key: fileKey{dev: 2049, ino: 1234}, gen: 42}
	var buf [HandleSize]byte
	fh := nfs3.FH(c.encode(buf[:0], id))
	if n := testing.AllocsPerRun(100, func() {
		got, st := c.decode(fh)
		if st != nfs3.StatusOK || got != id {
			t.Fatalf("decode: %v %+v", st, got)
		}
		_ = c.encode(buf[:0], id)
	}); n != 0 {
		t.Fatalf("%v allocations per encode and decode, want 0", n)
	}
}

//go:build linux

package nfsserver

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"slices"
	"strings"
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

// A new handle key is made stable with its name: the state directory is fsynced after
// the key is linked in, and a failure to do so is the start's error, not a key that a
// crash could take away with every handle given out.
func TestHandleKeyDirectorySynced(t *testing.T) {
	dir := t.TempDir()
	var synced []string
	fail := false
	defer func(f func(string) error) { syncDir = f }(syncDir)
	syncDir = func(d string) error {
		synced = append(synced, d)
		if fail {
			return errors.New("injected EIO")
		}
		return nil
	}
	if _, created, err := loadOrCreateKey(dir); err != nil || !created {
		t.Fatalf("first start: created %v, %v", created, err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Fatalf("directories synced: %q, want %q", synced, dir)
	}
	if _, created, err := loadOrCreateKey(dir); err != nil || created || len(synced) != 1 {
		t.Fatalf("second start: created %v, %v, %d syncs; want the key read, no sync", created, err, len(synced))
	}
	// A state directory the server makes is stable too: its entry, in its parent.
	synced = nil
	base := t.TempDir()
	made := filepath.Join(base, "a", "b")
	if _, created, err := loadOrCreateKey(made); err != nil || !created {
		t.Fatalf("start with a new state directory: created %v, %v", created, err)
	}
	if want := []string{base, filepath.Join(base, "a"), made}; !slices.Equal(synced, want) {
		t.Fatalf("directories synced: %q, want %q", synced, want)
	}
	fail = true
	if _, _, err := loadOrCreateKey(t.TempDir()); err == nil || !strings.Contains(err.Error(), "injected EIO") {
		t.Fatalf("a failed directory sync: %v, want the start to fail with it", err)
	}
}

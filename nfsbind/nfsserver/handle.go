//go:build linux

package nfsserver

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-rpcrdma/rpcrdma/internal/stabledir"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// Handle layout (48 bytes, big-endian):
//
//	0      1..3     4..7       8..15  16..23  24..31      32..47
//	+------+--------+----------+------+-------+-----------+-------------------------+
//	| vers | zero   | exportID | dev  | ino   | generation| HMAC-SHA256(key, 0..31)  |
//	+------+--------+----------+------+-------+-----------+-------------------------+
const (
	handleVersion = 1
	handleBody    = 32
	handleMACLen  = 16
	// HandleSize is the length of every file handle this server issues.
	HandleSize = handleBody + handleMACLen
	// KeySize is the length of the handle MAC key.
	KeySize = 32
)

// fileKey identifies an inode on the server.
type fileKey struct {
	dev, ino uint64
}

type handleID struct {
	key fileKey
	gen uint64
}

// handleCodec issues and checks handles. It computes HMAC-SHA256 (RFC 2104) itself,
// with the key already padded, so that a MAC is two sha256.Sum256 calls over arrays
// on the stack: no hash state to pool and nothing escaping to the heap, on a path
// every call takes.
type handleCodec struct {
	exportID uint32
	ipad     [sha256.BlockSize]byte // key XOR 0x36
	opad     [sha256.BlockSize]byte // key XOR 0x5c
}

func newHandleCodec(key []byte, exportID uint32) *handleCodec {
	c := &handleCodec{exportID: exportID}
	k := key
	if len(k) > sha256.BlockSize {
		sum := sha256.Sum256(k)
		k = sum[:]
	}
	copy(c.ipad[:], k)
	copy(c.opad[:], k)
	for i := range c.ipad {
		c.ipad[i] ^= 0x36
		c.opad[i] ^= 0x5c
	}
	return c
}

// mac writes the first handleMACLen bytes of HMAC-SHA256(key, body) to dst; body is
// handleBody bytes.
func (c *handleCodec) mac(dst, body []byte) {
	var in [sha256.BlockSize + handleBody]byte
	copy(in[:], c.ipad[:])
	copy(in[sha256.BlockSize:], body)
	inner := sha256.Sum256(in[:])
	var out [sha256.BlockSize + sha256.Size]byte
	copy(out[:], c.opad[:])
	copy(out[sha256.BlockSize:], inner[:])
	sum := sha256.Sum256(out[:])
	copy(dst, sum[:handleMACLen])
}

// encode appends the handle of id to dst.
func (c *handleCodec) encode(dst []byte, id handleID) []byte {
	var b [HandleSize]byte
	b[0] = handleVersion
	binary.BigEndian.PutUint32(b[4:], c.exportID)
	binary.BigEndian.PutUint64(b[8:], id.key.dev)
	binary.BigEndian.PutUint64(b[16:], id.key.ino)
	binary.BigEndian.PutUint64(b[24:], id.gen)
	c.mac(b[handleBody:], b[:handleBody])
	return append(dst, b[:]...)
}

// signed reports whether the MAC of fh, a handle of HandleSize bytes, holds under
// c's key: this server's key issued it, for whichever export.
func (c *handleCodec) signed(fh nfs3.FH) bool {
	var want [handleMACLen]byte
	c.mac(want[:], fh[:handleBody])
	return hmac.Equal(want[:], fh[handleBody:])
}

// decode checks a handle. One that cannot have been issued by this server's code
// (wrong length, version or reserved bytes) is malformed: NFS3ERR_BADHANDLE. A
// well-formed one that fails the MAC is NFS3ERR_STALE: it was most likely issued under
// a key this server no longer has (a restart without its StateDir), and a client must
// be told the file is gone, not that it sent garbage; a forged one gets the same
// answer and reaches nothing. Another export id is NFS3ERR_STALE too.
func (c *handleCodec) decode(fh nfs3.FH) (handleID, nfs3.Status) {
	if len(fh) != HandleSize || fh[0] != handleVersion || fh[1]|fh[2]|fh[3] != 0 {
		return handleID{}, nfs3.StatusBadHandle
	}
	if !c.signed(fh) || binary.BigEndian.Uint32(fh[4:]) != c.exportID {
		return handleID{}, nfs3.StatusStale
	}
	return handleID{
		key: fileKey{dev: binary.BigEndian.Uint64(fh[8:]), ino: binary.BigEndian.Uint64(fh[16:])},
		gen: binary.BigEndian.Uint64(fh[24:]),
	}, nfs3.StatusOK
}

const keyFile = "nfs3-handle.key"

// loadOrCreateKey reads the handle key from dir, creating it (mode 0600) on first use.
// It reports whether it created the key.
func loadOrCreateKey(dir string) ([]byte, bool, error) {
	path := filepath.Join(dir, keyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) != KeySize {
			return nil, false, fmt.Errorf("nfsserver: handle key %s: %d bytes, want %d", path, len(b), KeySize)
		}
		return b, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("nfsserver: reading handle key: %w", err)
	}
	if err := stabledir.MkdirAll(dir, 0o700, syncDir); err != nil {
		return nil, false, fmt.Errorf("nfsserver: state directory: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("nfsserver: generating handle key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, keyFile+".*")
	if err != nil {
		return nil, false, fmt.Errorf("nfsserver: writing handle key: %w", err)
	}
	_, werr := tmp.Write(key)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return nil, false, fmt.Errorf("nfsserver: writing handle key: %w", err)
	}
	// Link rather than rename, so two servers starting at once agree on one key.
	if err := os.Link(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		if errors.Is(err, fs.ErrExist) {
			return loadOrCreateKey(dir)
		}
		return nil, false, fmt.Errorf("nfsserver: installing handle key: %w", err)
	}
	os.Remove(tmp.Name())
	// The key is on disk; its name is only once the directory is: a crash before that
	// would lose the key, and every handle the server gave out with it.
	if err := syncDir(dir); err != nil {
		return nil, false, fmt.Errorf("nfsserver: installing handle key: %w", err)
	}
	return key, true, nil
}

// syncDir makes the entries of directory dir stable (fsync of the directory). A
// variable, so that a test can see it is called.
var syncDir = stabledir.SyncDir

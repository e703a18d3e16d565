//go:build linux

package nfsserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// TestNestedExportMountThroughLink: knfsd's mountd resolves the symbolic links of
// the MNT path (realpath) before it matches the path against the exports, so MNT of a
// link in the parent export that leads into a read-only export nested on its own mount
// gives the nested export's handle (its options), as LOOKUP through the mount point
// does. The server matched the unresolved path, gave the parent's handle, and so the
// parent's read-write options below the read-only nested export.
func TestNestedExportMountThroughLink(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	e, dir := newNestedExportEnv(t, "%D 127.0.0.1(rw,insecure,no_root_squash,crossmnt)\n%D/sub 127.0.0.1(ro,insecure,fsid=9)\n")
	if err := os.Symlink("sub", filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	c := e.dialFrom("127.0.0.1", false, rootCred())
	sub, st := c.lookup(c.mount(dir), "sub")
	wantStatus(t, "LOOKUP sub", st, nfs3.StatusOK)
	if exportIDOf(sub) != 9 {
		t.Fatalf("LOOKUP sub: export id %d, want 9", exportIDOf(sub))
	}
	fh, ms := c.mountStatus(dir + "/lnk")
	if ms != nfs3.MountOK {
		t.Fatalf("MNT %s/lnk: %v", dir, ms)
	}
	if exportIDOf(fh) != 9 {
		t.Errorf("MNT of a link to the nested export: export id %d, want 9 (the nested export's)", exportIDOf(fh))
	}
	f, st := c.lookup(fh, "f")
	wantStatus(t, "LOOKUP f below the link", st, nfs3.StatusOK)
	if st == nfs3.StatusOK {
		wantStatus(t, "WRITE below the read-only nested export, mounted through a link", c.write(f, 0, []byte("X"), nfs3.FileSync).Status, nfs3.StatusROFS)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "f")); string(b) != "nested" {
		t.Errorf("sub/f now holds %q", b)
	}
}

//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnit has systemd check the unit file shipped beside the command
// (systemd-analyze verify; any complaint, even an ignored key, fails), with its
// ExecStart pointing at an executable that exists here.
func TestSystemdUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
	}
	unit, err := os.ReadFile(filepath.Join("systemd", "nfsrdmad.service"))
	if err != nil {
		t.Fatal(err)
	}
	const bin = "/usr/local/sbin/nfsrdmad"
	if !strings.Contains(string(unit), "ExecStart="+bin+" ") {
		t.Fatalf("the unit does not start %s", bin)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nfsrdmad.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), bin, exe)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, want := range []string{"Type=notify", "ExecReload=" + bin + " -check -exports /etc/nfsrdmad.exports $NFSRDMAD_OPTS", "ExecReload=/bin/kill -HUP $MAINPID", "StateDirectory=nfsrdmad"} {
		if !strings.Contains(string(unit), "\n"+want+"\n") {
			t.Errorf("the unit lacks %s, which the command's systemd support relies on", want)
		}
	}
}

package ibverbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestErrorTexts(t *testing.T) {
	me := &MemlockError{Length: 1 << 20, Limit: 65536, Err: syscall.ENOMEM}
	if s := me.Error(); !strings.Contains(s, "ulimit -l") || !strings.Contains(s, "LimitMEMLOCK") || !strings.Contains(s, "65536") {
		t.Errorf("MemlockError text %q", s)
	}
	if !errors.Is(me, syscall.ENOMEM) {
		t.Error("MemlockError does not unwrap to its errno")
	}
	pe := &PortDownError{Device: "rxe0", Port: 1, State: "DOWN"}
	if s := pe.Error(); !strings.Contains(s, "rxe0 port 1 is DOWN") {
		t.Errorf("PortDownError text %q", s)
	}
}

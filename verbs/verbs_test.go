package verbs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestStrings(t *testing.T) {
	cases := map[string]fmt.Stringer{
		"None":                   Access(0),
		"LocalWrite|RemoteWrite": AccessLocalWrite | AccessRemoteWrite,
		"RemoteRead|Unknown":     AccessRemoteRead | 0x100,
		"RTS":                    StateRTS,
		"Read":                   OpRead,
		"SendOp(9)":              SendOp(9),
		"Recv":                   OpcodeRecv,
		"Flushed":                StatusFlushed,
		"Status(99)":             Status(99),
		"RemoteInvalidate":       StatusRemoteInvalidate,
	}
	for want, s := range cases {
		if got := s.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", s, got, want)
		}
	}
}

func TestErrors(t *testing.T) {
	te := &TerminateError{Received: true, Layer: 1, EType: 2, ECode: 3, Reason: "MSN"}
	qe := &QPError{Cause: te}
	var got *TerminateError
	if !errors.As(qe, &got) || got != te {
		t.Fatal("QPError does not unwrap to its TerminateError")
	}
	if !errors.Is(qe, ErrFlushed) {
		t.Fatal("QPError is not ErrFlushed")
	}
	if s := qe.Error(); !strings.Contains(s, "received") || !strings.Contains(s, "DDP") || !strings.Contains(s, "0x03") {
		t.Errorf("QPError text %q", s)
	}
	re := &RejectedError{PrivateData: []byte("x"), Reason: "busy"}
	if s := re.Error(); !strings.Contains(s, "busy") || !strings.Contains(s, "1 bytes") {
		t.Errorf("RejectedError text %q", s)
	}
	if s := (&CQOverrunError{Depth: 4}).Error(); !strings.Contains(s, "4") {
		t.Errorf("CQOverrunError text %q", s)
	}
}

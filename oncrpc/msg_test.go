package oncrpc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// unhex decodes hex written in groups ("0000 0001 ..."), ignoring spaces and newlines.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var sysParams = AuthSysParams{Stamp: 0x12345678, MachineName: []byte("box"), UID: 1000, GID: 100, GIDs: []uint32{100, 10}}

// authSysBodyHex is sysParams, byte by byte (RFC 5531 Appendix A):
const authSysBodyHex = `
	12345678 ` + /* stamp */ `
	00000003 626f7800 ` + /* machinename<255>: length 3, "box", 1 pad byte */ `
	000003e8 ` + /* uid 1000 */ `
	00000064 ` + /* gid 100 */ `
	00000002 00000064 0000000a` /* gids<16>: count 2, 100, 10 */

var callGolden = []struct {
	name string
	hdr  CallHeader
	hex  string
}{
	{
		name: "AUTH_NONE",
		hdr:  CallHeader{XID: 0x01020304, Prog: 100003, Vers: 3, Proc: 0},
		hex: `01020304 ` + /* xid */ `
		      00000000 ` + /* msg_type CALL */ `
		      00000002 ` + /* rpcvers 2 */ `
		      000186a3 ` + /* prog 100003 (NFS) */ `
		      00000003 ` + /* vers 3 */ `
		      00000000 ` + /* proc 0 (NULL) */ `
		      00000000 00000000 ` + /* cred: AUTH_NONE, body<> empty */ `
		      00000000 00000000`, /* verf: AUTH_NONE, body<> empty */
	},
	{
		name: "AUTH_SYS",
		hdr: CallHeader{XID: 0xdeadbeef, Prog: 100005, Vers: 3, Proc: 1,
			Cred: OpaqueAuth{Flavor: AuthSys, Body: sysParams.Append(nil)}},
		hex: `deadbeef 00000000 00000002 ` + /* xid, CALL, rpcvers 2 */ `
		      000186a5 00000003 00000001 ` + /* prog 100005 (MOUNT), vers 3, proc 1 (MNT) */ `
		      00000001 00000020 ` + /* cred: AUTH_SYS, body length 32 */ authSysBodyHex + `
		      00000000 00000000`, /* verf: AUTH_NONE, empty */
	},
}

func TestCallHeaderGolden(t *testing.T) {
	for _, tc := range callGolden {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			if got := tc.hdr.Append(nil); !bytes.Equal(got, want) {
				t.Fatalf("Append:\n got %x\nwant %x", got, want)
			}
			var e xdr.Encoder
			tc.hdr.EncodeXDR(&e)
			if !bytes.Equal(e.Bytes(), want) {
				t.Fatalf("EncodeXDR:\n got %x\nwant %x", e.Bytes(), want)
			}
			var h CallHeader
			d := xdr.NewDecoder(append(want, 0xaa, 0xbb, 0xcc, 0xdd))
			if err := h.DecodeXDR(d); err != nil {
				t.Fatal(err)
			}
			wantHdr := tc.hdr
			wantHdr.RPCVers = 2
			if h.XID != wantHdr.XID || h.RPCVers != 2 || h.Prog != wantHdr.Prog || h.Vers != wantHdr.Vers ||
				h.Proc != wantHdr.Proc || h.Cred.Flavor != wantHdr.Cred.Flavor || !bytes.Equal(h.Cred.Body, wantHdr.Cred.Body) ||
				h.Verf.Flavor != AuthNone || len(h.Verf.Body) != 0 {
				t.Fatalf("decoded %+v, want %+v", h, wantHdr)
			}
			if d.Len() != 4 {
				t.Fatalf("decoder left at %d, want the 4 argument bytes", d.Offset())
			}
		})
	}
}

// replyPrefix is xid 1, msg_type REPLY.
const replyPrefix = `00000001 00000001 `

// acceptedPrefix adds MSG_ACCEPTED and an AUTH_NONE verifier.
const acceptedPrefix = replyPrefix + `00000000 00000000 00000000 `

var replyGolden = []struct {
	name string
	hdr  ReplyHeader
	hex  string
	err  string // ReplyHeader.Err() text; empty for SUCCESS
}{
	{"SUCCESS", ReplyHeader{XID: 1, AcceptStat: Success}, acceptedPrefix + `00000000`, ""},
	{"PROG_UNAVAIL", ReplyHeader{XID: 1, AcceptStat: ProgUnavail}, acceptedPrefix + `00000001`,
		"oncrpc: call accepted, PROG_UNAVAIL"},
	{"PROG_MISMATCH", ReplyHeader{XID: 1, AcceptStat: ProgMismatch, Low: 2, High: 4},
		acceptedPrefix + `00000002 00000002 00000004`, /* accept_stat 2, low 2, high 4 */
		"oncrpc: call accepted, PROG_MISMATCH (versions 2..4 supported)"},
	{"PROC_UNAVAIL", ReplyHeader{XID: 1, AcceptStat: ProcUnavail}, acceptedPrefix + `00000003`,
		"oncrpc: call accepted, PROC_UNAVAIL"},
	{"GARBAGE_ARGS", ReplyHeader{XID: 1, AcceptStat: GarbageArgs}, acceptedPrefix + `00000004`,
		"oncrpc: call accepted, GARBAGE_ARGS"},
	{"SYSTEM_ERR", ReplyHeader{XID: 1, AcceptStat: SystemErr}, acceptedPrefix + `00000005`,
		"oncrpc: call accepted, SYSTEM_ERR"},
	{"RPC_MISMATCH", ReplyHeader{XID: 1, Stat: MsgDenied, RejectStat: RPCMismatch, Low: 2, High: 2},
		replyPrefix + `00000001 00000000 00000002 00000002`, /* MSG_DENIED, RPC_MISMATCH, low 2, high 2 */
		"oncrpc: call denied, RPC_MISMATCH (versions 2..2 supported)"},
}

func init() {
	// MSG_DENIED, AUTH_ERROR with every auth_stat of RFC 5531 (1..14).
	for s := AuthBadCred; s <= RPCSecGSSCtxProblem; s++ {
		replyGolden = append(replyGolden, struct {
			name string
			hdr  ReplyHeader
			hex  string
			err  string
		}{
			name: s.String(),
			hdr:  ReplyHeader{XID: 1, Stat: MsgDenied, RejectStat: AuthError, AuthStat: s},
			hex:  replyPrefix + `00000001 00000001 ` + hex.EncodeToString([]byte{0, 0, 0, byte(s)}),
			err:  "oncrpc: call denied, AUTH_ERROR: " + s.String(),
		})
	}
}

func TestReplyHeaderGolden(t *testing.T) {
	for _, tc := range replyGolden {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			if got := tc.hdr.Append(nil); !bytes.Equal(got, want) {
				t.Fatalf("Append:\n got %x\nwant %x", got, want)
			}
			var e xdr.Encoder
			tc.hdr.EncodeXDR(&e)
			if !bytes.Equal(e.Bytes(), want) {
				t.Fatalf("EncodeXDR:\n got %x\nwant %x", e.Bytes(), want)
			}
			var h ReplyHeader
			d := xdr.NewDecoder(want)
			if err := h.DecodeXDR(d); err != nil {
				t.Fatal(err)
			}
			if d.Len() != 0 {
				t.Fatalf("%d bytes left", d.Len())
			}
			if h.XID != tc.hdr.XID || h.Stat != tc.hdr.Stat || h.Verf.Flavor != AuthNone || len(h.Verf.Body) != 0 ||
				h.AcceptStat != tc.hdr.AcceptStat || h.RejectStat != tc.hdr.RejectStat ||
				h.AuthStat != tc.hdr.AuthStat || h.Low != tc.hdr.Low || h.High != tc.hdr.High {
				t.Fatalf("decoded %+v, want %+v", h, tc.hdr)
			}
			err := h.Err()
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Err() = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.err {
				t.Fatalf("Err() = %v, want %q", err, tc.err)
			}
			var ae *AcceptError
			var re *RejectError
			switch {
			case errors.As(err, &ae):
				if h.Stat != MsgAccepted || ae.Stat != h.AcceptStat || ae.Low != h.Low || ae.High != h.High {
					t.Fatalf("AcceptError %+v for %+v", ae, h)
				}
			case errors.As(err, &re):
				if h.Stat != MsgDenied || re.Stat != h.RejectStat || re.AuthStat != h.AuthStat || re.Low != h.Low {
					t.Fatalf("RejectError %+v for %+v", re, h)
				}
			default:
				t.Fatalf("Err() is %T", err)
			}
		})
	}
}

// Every decoding error names the field it was decoding.
func TestCallHeaderErrors(t *testing.T) {
	valid := unhex(t, callGolden[1].hex)
	for _, tc := range []struct {
		name  string
		in    []byte
		field string
		is    error
	}{
		{"empty", nil, "xid", xdr.ErrShort},
		{"short msg_type", valid[:6], "msg_type", xdr.ErrShort},
		{"reply", unhex(t, `00000001 00000001`), "msg_type", ErrNotCall},
		{"bad msg_type", unhex(t, `00000001 00000007`), "msg_type", ErrNotCall},
		{"short rpcvers", valid[:10], "rpcvers", xdr.ErrShort},
		{"rpcvers 3", unhex(t, `00000001 00000000 00000003 000186a3`), "rpcvers", ErrRPCVersion},
		{"short prog", valid[:12], "prog", xdr.ErrShort},
		{"short vers", valid[:16], "vers", xdr.ErrShort},
		{"short proc", valid[:20], "proc", xdr.ErrShort},
		{"short cred flavor", valid[:26], "cred.flavor", xdr.ErrShort},
		{"short cred body", valid[:40], "cred.body", xdr.ErrShort},
		{"cred body over 400", unhex(t, `00000001 00000000 00000002 00000001 00000001 00000000 00000001 00000191`), "cred.body", xdr.ErrTooLong},
		{"short verf flavor", valid[:len(valid)-6], "verf.flavor", xdr.ErrShort},
		{"short verf body", valid[:len(valid)-2], "verf.body", xdr.ErrShort},
		{"verf body over 400", append(valid[:len(valid)-4:len(valid)-4], 0, 0, 1, 0x91), "verf.body", xdr.ErrTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h CallHeader
			err := h.DecodeXDR(xdr.NewDecoder(tc.in))
			var he *HeaderError
			if !errors.As(err, &he) || he.Field != tc.field || !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want field %s, %v", err, tc.field, tc.is)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name %s", err, tc.field)
			}
		})
	}
}

func TestReplyHeaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name, hex, field string
		is               error
	}{
		{"empty", ``, "xid", xdr.ErrShort},
		{"call", `00000001 00000000`, "msg_type", ErrNotReply},
		{"short reply_stat", `00000001 00000001`, "reply_stat", xdr.ErrShort},
		{"bad reply_stat", `00000001 00000001 00000002`, "reply_stat", ErrBadDiscriminant},
		{"short verf", `00000001 00000001 00000000 00000000`, "verf.body", xdr.ErrShort},
		{"short accept_stat", acceptedPrefix, "accept_stat", xdr.ErrShort},
		{"bad accept_stat", acceptedPrefix + `00000006`, "accept_stat", ErrBadDiscriminant},
		{"short prog mismatch low", acceptedPrefix + `00000002`, "mismatch_info.low", xdr.ErrShort},
		{"short prog mismatch high", acceptedPrefix + `00000002 00000002`, "mismatch_info.high", xdr.ErrShort},
		{"short reject_stat", replyPrefix + `00000001`, "reject_stat", xdr.ErrShort},
		{"bad reject_stat", replyPrefix + `00000001 00000002`, "reject_stat", ErrBadDiscriminant},
		{"short rpc mismatch high", replyPrefix + `00000001 00000000 00000002`, "mismatch_info.high", xdr.ErrShort},
		{"short auth_stat", replyPrefix + `00000001 00000001`, "auth_stat", xdr.ErrShort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h ReplyHeader
			err := h.DecodeXDR(xdr.NewDecoder(unhex(t, tc.hex)))
			var he *HeaderError
			if !errors.As(err, &he) || he.Field != tc.field || !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want field %s, %v", err, tc.field, tc.is)
			}
		})
	}
}

func TestReplyHeaderUnknownAuthStatCarried(t *testing.T) {
	var h ReplyHeader
	if err := h.DecodeXDR(xdr.NewDecoder(unhex(t, replyPrefix+`00000001 00000001 00000063`))); err != nil {
		t.Fatal(err)
	}
	if h.AuthStat != 99 || h.Err().Error() != "oncrpc: call denied, AUTH_ERROR: auth_stat(99)" {
		t.Fatalf("%+v: %v", h, h.Err())
	}
}

func BenchmarkCallHeaderEncode(b *testing.B) {
	h := callGolden[1].hdr
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = h.Append(buf[:0])
	}
}

func BenchmarkCallHeaderDecode(b *testing.B) {
	in := callGolden[1].hdr.Append(nil)
	var h CallHeader
	var d xdr.Decoder
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(in)
		if err := h.DecodeXDR(&d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReplyHeaderEncode(b *testing.B) {
	h := ReplyHeader{XID: 7, AcceptStat: Success}
	var e xdr.Encoder
	e.Reset(make([]byte, 0, 64))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(e.Bytes()[:0])
		h.EncodeXDR(&e)
	}
}

func BenchmarkReplyHeaderDecode(b *testing.B) {
	in := (&ReplyHeader{XID: 7, AcceptStat: ProgMismatch, Low: 2, High: 4}).Append(nil)
	var h ReplyHeader
	var d xdr.Decoder
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(in)
		if err := h.DecodeXDR(&d); err != nil {
			b.Fatal(err)
		}
	}
}

func TestEnumNames(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Call.String(), "CALL"}, {Reply.String(), "REPLY"}, {MsgType(9).String(), "msg_type(9)"},
		{MsgAccepted.String(), "MSG_ACCEPTED"}, {MsgDenied.String(), "MSG_DENIED"}, {ReplyStat(2).String(), "reply_stat(2)"},
		{SystemErr.String(), "SYSTEM_ERR"}, {AcceptStat(6).String(), "accept_stat(6)"},
		{RPCMismatch.String(), "RPC_MISMATCH"}, {AuthError.String(), "AUTH_ERROR"}, {RejectStat(2).String(), "reject_stat(2)"},
		{RPCSecGSSCtxProblem.String(), "RPCSEC_GSS_CTXPROBLEM"}, {AuthStat(15).String(), "auth_stat(15)"},
		{AuthNone.String(), "AUTH_NONE"}, {AuthSys.String(), "AUTH_SYS"}, {AuthShort.String(), "AUTH_SHORT"},
		{AuthDH.String(), "AUTH_DH"}, {RPCSecGSS.String(), "RPCSEC_GSS"}, {Flavor(4).String(), "auth_flavor(4)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

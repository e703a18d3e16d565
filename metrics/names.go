package metrics

import (
	"strings"

	"github.com/go-rpcrdma/rpcrdma/confproto"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
	"github.com/go-rpcrdma/rpcrdma/oncrpc"
	"github.com/go-rpcrdma/rpcrdma/rpcbind"
)

// Transport returns the transport label of a netid: "rdma" for rdma and rdma6,
// "tcp" for tcp and tcp6, "other" for none.
func Transport(netid string) string {
	if netid == "" {
		return "other"
	}
	return strings.TrimSuffix(netid, "6")
}

// Names returns the label values of a procedure: the program's name for the programs
// this module serves ("nfs", "mount", "conf_rdma", "rpcbind"; otherwise the number),
// the version number, and the procedure's name in lower case as nfsstat prints it
// ("read", "mnt", "conf_rdma"; otherwise the number). The program, version and
// procedure of oncrpc.OtherProc, whatever k's Netid, are all "other".
func Names(k oncrpc.ProcKey) (program, version, procedure string) {
	if k.Prog == oncrpc.OtherProc.Prog && k.Vers == oncrpc.OtherProc.Vers && k.Proc == oncrpc.OtherProc.Proc {
		return "other", "other", "other"
	}
	program, version, procedure = itoa(k.Prog), itoa(k.Vers), itoa(k.Proc)
	switch k.Prog {
	case nfs3.Program:
		program = "nfs"
		if k.Vers == nfs3.Version && k.Proc < nfs3.NumProcs {
			procedure = strings.ToLower(nfs3.Proc(k.Proc).String())
		}
	case nfs3.MountProgram:
		program = "mount"
		if k.Vers == nfs3.MountVersion && k.Proc < nfs3.NumMountProcs {
			procedure = strings.ToLower(strings.TrimPrefix(nfs3.MountProc(k.Proc).String(), "MOUNTPROC3_"))
		}
	case confproto.Program:
		program = "conf_rdma"
		switch k.Proc {
		case confproto.ProcNull:
			procedure = "null"
		case confproto.ProcConfRDMA:
			procedure = "conf_rdma"
		}
	case rpcbind.Program:
		program = "rpcbind"
	}
	return program, version, procedure
}

package portmap

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/oncrpc"
)

// Set registers m with the port mapper reached through rt (PMAPPROC_SET). It reports
// whether the port mapper accepted it (it refuses a mapping that exists already, and
// callers that are not local or privileged).
func Set(ctx context.Context, rt oncrpc.RoundTripper, m Mapping) (bool, error) {
	var r boolRes
	if err := oncrpc.NewClient(rt, Program, VersionV2).Call(ctx, PmapSet, &m, &r); err != nil {
		return false, fmt.Errorf("portmap: SET %d/%d: %w", m.Prog, m.Vers, err)
	}
	return r.v, nil
}

// Unset removes every mapping of m.Prog and m.Vers (PMAPPROC_UNSET; m.Prot and m.Port
// are ignored by the protocol).
func Unset(ctx context.Context, rt oncrpc.RoundTripper, m Mapping) (bool, error) {
	var r boolRes
	if err := oncrpc.NewClient(rt, Program, VersionV2).Call(ctx, PmapUnset, &m, &r); err != nil {
		return false, fmt.Errorf("portmap: UNSET %d/%d: %w", m.Prog, m.Vers, err)
	}
	return r.v, nil
}

// GetPort asks for the port of prog/vers over prot (PMAPPROC_GETPORT); 0 means not
// registered.
func GetPort(ctx context.Context, rt oncrpc.RoundTripper, prog, vers, prot uint32) (int, error) {
	var r uint32Res
	m := Mapping{Prog: prog, Vers: vers, Prot: prot}
	if err := oncrpc.NewClient(rt, Program, VersionV2).Call(ctx, PmapGetport, &m, &r); err != nil {
		return 0, fmt.Errorf("portmap: GETPORT %d/%d: %w", prog, vers, err)
	}
	return int(r.v), nil
}

// GetAddr asks an rpcbind (version 3 or 4) for the universal address of prog/vers on
// netid (RPCBPROC_GETADDR); "" means not registered.
func GetAddr(ctx context.Context, rt oncrpc.RoundTripper, vers uint32, prog, progVers uint32, netid string) (string, error) {
	var r stringRes
	q := Rpcb{Prog: prog, Vers: progVers, Netid: netid}
	if err := oncrpc.NewClient(rt, Program, vers).Call(ctx, RpcbGetaddr, &q, &r); err != nil {
		return "", fmt.Errorf("portmap: GETADDR %d/%d %s: %w", prog, progVers, netid, err)
	}
	return r.v, nil
}

// Dump lists the mappings of a PMAP v2 port mapper (PMAPPROC_DUMP).
func Dump(ctx context.Context, rt oncrpc.RoundTripper) ([]Mapping, error) {
	var l PmapList
	if err := oncrpc.NewClient(rt, Program, VersionV2).Call(ctx, PmapDump, nil, &l); err != nil {
		return nil, fmt.Errorf("portmap: DUMP: %w", err)
	}
	return l, nil
}

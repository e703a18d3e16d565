//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// runDf shows the space and the files of the file system holding an export, as df
// shows a mounted one (FSSTAT).
func runDf(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	ctx, cancel, f, pos, err := startCommand(ctx, "df", args, 1, stderr, nil)
	if err != nil {
		return err
	}
	defer cancel()
	r, s, err := mountRemote(ctx, f, pos[0])
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.c.Fsstat(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	fmt.Fprint(stdout, dfTable(remote{host: r.host, path: s.export}.String(), &st))
	return nil
}

// dfTable formats FSSTAT results as df -h and df -i do, in one table: used is the
// total less the free, and use% is used over used plus what the caller may still
// use, rounded up.
func dfTable(name string, st *nfs3.FsstatRes) string {
	used := st.Tbytes - min(st.Fbytes, st.Tbytes)
	iused := st.Tfiles - min(st.Ffiles, st.Tfiles)
	return fmt.Sprintf("%-30s %8s %8s %8s %4s %10s %10s %10s %5s\n%-30s %8s %8s %8s %4s %10d %10d %10d %5s\n",
		"Export", "Size", "Used", "Avail", "Use%", "Inodes", "IUsed", "IFree", "IUse%",
		name, humanBytes(st.Tbytes), humanBytes(used), humanBytes(st.Abytes), percentUp(used, used+st.Abytes),
		st.Tfiles, iused, st.Afiles, percentUp(iused, iused+st.Afiles))
}

// percentUp is n of total as df prints it: a whole percentage rounded up, "-" for
// no total.
func percentUp(n, total uint64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", (n*100+total-1)/total)
}

// humanBytes is n in powers of 1024, rounded up, with one decimal below 10, as df -h
// prints sizes.
func humanBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprint(n)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v < 10 {
		v = math.Ceil(v*10) / 10
	} else {
		v = math.Ceil(v)
	}
	if v >= 1024 && u < len(units)-1 { // rounded up to the next unit
		v, u = 1, u+1
	}
	if v < 10 {
		return fmt.Sprintf("%.1f%c", v, units[u])
	}
	return fmt.Sprintf("%.0f%c", v, units[u])
}

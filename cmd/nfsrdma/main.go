//go:build linux

// Command nfsrdma is an NFS version 3 client and benchmark over RPC-over-RDMA (the
// software iWARP provider, verbs/soft) or TCP, built on package nfsclient:
//
//	nfsrdma ls    [flags] SERVER:/path          list a directory (or show a file)
//	nfsrdma get   [flags] SERVER:/path LOCAL    copy a file from the server ("-": stdout)
//	nfsrdma put   [flags] LOCAL SERVER:/path    copy a file to the server
//	nfsrdma mkdir [flags] SERVER:/path          make a directory
//	nfsrdma rm    [flags] SERVER:/path          remove a file or an empty directory
//	nfsrdma bench [flags] SERVER:/dir           READ/WRITE throughput, RDMA vs TCP,
//	                                            medians of -rounds rounds
//	nfsrdma demo  [flags]                       serve a temporary directory in process
//	                                            and exercise it end to end
//
// SERVER is a host name or address ([addr] for IPv6); /path is the server-side path:
// the export path (as nfsrdmad prints it) followed by the path inside the export.
// nfsrdma asks the server's MOUNT service for its export list and mounts the longest
// export containing the path; from a server that has no EXPORT procedure or lists
// nothing (willscott/go-nfs), it mounts the path itself.
//
// Flags common to the client commands:
//
//	-proto rdma|tcp  transport for NFS (default rdma; bench: both); MOUNT always uses TCP
//	-port N          NFS port for -proto (default: -rdma-port or -tcp-port)
//	-rdma-port N     NFS over RDMA port (default 20049)
//	-tcp-port N      NFS over TCP port (default 2049)
//	-mountport N     MOUNT port over TCP (default 2049, where nfsrdmad serves it;
//	                 for a kernel nfsd see `rpcinfo -p SERVER` for mountd's port)
//	-provider NAME   soft (default: verbs/soft) or ibverbs (binaries built with
//	                 -tags ibverbs; -device NAME picks the device)
//	-timeout D       bound on the whole command (default 10m)
//
// READ data lands in the client's buffers by RDMA Write (write chunks) and WRITE data
// leaves them by RDMA Read (read chunks), with no copy on either side. Calls carry
// AUTH_SYS credentials with the caller's uid and gid.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "nfsrdma:", err)
		}
		os.Exit(1)
	}
}

// command is one subcommand.
type command struct {
	usage string // arguments after the name
	help  string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"ls":    {"[flags] SERVER:/path", "list a directory, or show one file", runLs},
		"get":   {"[flags] SERVER:/path LOCAL", "copy a file from the server to LOCAL (a file, a directory, or - for stdout)", runGet},
		"put":   {"[flags] LOCAL SERVER:/path", "copy the file LOCAL to the server (into /path when it is a directory)", runPut},
		"mkdir": {"[flags] SERVER:/path", "make a directory", runMkdir},
		"rm":    {"[flags] SERVER:/path", "remove a file or an empty directory", runRm},
		"bench": {"[flags] SERVER:/dir", "measure READ and WRITE at 4 KiB and 1 MiB, queue depth 1 and 32, over RDMA and TCP", runBench},
		"demo":  {"[flags]", "serve a temporary directory in process and exercise it end to end over RDMA", runDemo},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: nfsrdma COMMAND [flags] ARGS\n\nNFSv3 client and benchmark over RPC-over-RDMA (software iWARP) or TCP.\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(w, "  %-6s %s\n         %s\n", n, c.usage, c.help)
	}
	fmt.Fprintln(w, "\nRun `nfsrdma COMMAND -h` for a command's flags. Start with `nfsrdma demo`.")
}

// run runs the subcommand named by args[0].
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errors.New("no command given")
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return nil
	}
	c, ok := commands[name]
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown command %q (want one of ls, get, put, mkdir, rm, bench, demo)", name)
	}
	return explain(c.run(ctx, args[1:], stdout, stderr))
}

// newFlagSet returns the flag set of subcommand name with its usage line.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("nfsrdma "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		c := commands[name]
		fmt.Fprintf(fs.Output(), "usage: nfsrdma %s %s\n\n%s.\n\nFlags:\n", name, c.usage, strings.ToUpper(c.help[:1])+c.help[1:])
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses args with fs, allowing flags after the positional arguments too,
// and checks that there are exactly n positional arguments.
func parseArgs(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != n {
		return nil, fmt.Errorf("%s: want %d argument(s), got %d %q (usage: nfsrdma %s %s)", fs.Name(), n, len(pos), pos, strings.TrimPrefix(fs.Name(), "nfsrdma "), commands[strings.TrimPrefix(fs.Name(), "nfsrdma ")].usage)
	}
	return pos, nil
}

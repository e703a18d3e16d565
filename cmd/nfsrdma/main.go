//go:build linux

// Command nfsrdma is an NFS version 3 client and benchmark over RPC-over-RDMA (the
// software iWARP provider, verbs/soft) or TCP, built on package nfsclient:
//
//	nfsrdma ls    [flags] SERVER:/path          list a directory (or show a file)
//	nfsrdma get   [flags] SERVER:/path LOCAL    copy a file from the server ("-": stdout)
//	nfsrdma put   [flags] LOCAL SERVER:/path    copy a file to the server ("-": stdin)
//	nfsrdma mkdir [flags] SERVER:/path          make a directory
//	nfsrdma rm    [flags] SERVER:/path          remove a file or an empty directory
//	nfsrdma df    [flags] SERVER:/path          the export's space and files (FSSTAT)
//	nfsrdma bench [flags] SERVER:/dir           READ/WRITE throughput, RDMA vs TCP,
//	                                            medians of -rounds rounds, CPU per call;
//	                                            -plot FILE.svg also draws them against
//	                                            queue depth; -server-metrics URL adds the
//	                                            server's CPU and checks the transports
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
//	-proto rdma|tcp     transport for NFS (default rdma; bench: both); MOUNT always uses TCP
//	-port N             NFS port for -proto
//	-rdma-port N        NFS over RDMA port
//	-tcp-port N         NFS over TCP port
//	-mountport N        MOUNT port over TCP
//	-rpcbind-port N     the server's rpcbind (default 111)
//	-provider NAME      soft (default: verbs/soft) or ibverbs (binaries built with
//	                    -tags ibverbs; -device NAME picks the device)
//	-timeo D            a call without a reply for D is sent again and "server HOST
//	                    not responding, still trying" printed, then "server HOST OK"
//	                    once it answers (default 60s; not bench)
//	-connect-timeout D  bound on establishing each connection (default 30s)
//	-timeout D          bound on the whole command (default 10m)
//	-log-level L        trace, debug, info (default), warn, error
//	-log-format F       text (default) or json
//
// Ports not given are asked of the server's rpcbind (NFS under netid rdma or tcp,
// MOUNT under tcp), as Linux mount does; when it does not answer or knows nothing,
// the well-known ports are used: 20049 for NFS over RDMA, 2049 for NFS over TCP and
// for MOUNT (where nfsrdmad serves it; a kernel nfsd's mountd is registered with
// rpcbind).
//
// put writes a temporary file (.NAME.nfsrdma-XXXXXX) beside the target and renames
// it over the target once the data is committed, so an interrupted or failed put
// leaves an existing file untouched and no partial one. Like cp, a destination
// ending in "/" must be an existing directory; an existing directory receives the
// file under its own name; any other path names the file. get follows the same rules
// for LOCAL.
//
// `nfsrdma -version` prints the version. The exit status is 0 on success (and for
// -h), 1 on failure, 2 for a bad command line, 130 after SIGINT (Ctrl-C) and 143
// after SIGTERM; either signal first cleans up (a put's temporary file is removed).
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
	"sort"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/internal/cli"
)

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	code := cli.Report(ctx, "nfsrdma", err)
	stop()
	os.Exit(code)
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
		"get":   {"[flags] SERVER:/path LOCAL", "copy a file from the server to LOCAL (a file, a directory, DIR/ which must exist, or - for stdout)", runGet},
		"put":   {"[flags] LOCAL SERVER:/path", "copy the file LOCAL (- for standard input, to /path naming the file) to the server (into /path when it is a directory, or /path/ which must be one), through a temporary file renamed over the target", runPut},
		"mkdir": {"[flags] SERVER:/path", "make a directory", runMkdir},
		"rm":    {"[flags] SERVER:/path", "remove a file or an empty directory", runRm},
		"df":    {"[flags] SERVER:/path", "show the space and files of the export's file system, as df -h and df -i", runDf},
		"bench": {"[flags] SERVER:/dir", "measure READ and WRITE at 4 KiB and 1 MiB, queue depth 1 and 32, over RDMA and TCP", runBench},
		"demo":  {"[flags]", "serve a temporary directory in process and exercise it end to end over RDMA", runDemo},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: nfsrdma COMMAND [flags] ARGS\n\nNFSv3 client and benchmark over RPC-over-RDMA (software iWARP) or TCP.\n\nCommands:")
	for _, n := range commandNames() {
		c := commands[n]
		fmt.Fprintf(w, "  %-6s %s\n         %s\n", n, c.usage, c.help)
	}
	fmt.Fprintln(w, "\nRun `nfsrdma COMMAND -h` for a command's flags, `nfsrdma -version` for the version.\nStart with `nfsrdma demo`.")
}

// commandNames returns the names of the subcommands, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// run runs the subcommand named by args[0].
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return cli.Usagef("no command given")
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return nil
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, cli.VersionLine("nfsrdma"))
		return nil
	}
	c, ok := commands[name]
	if !ok {
		usage(stderr)
		return cli.Usagef("unknown command %q (want one of %s)", name, strings.Join(commandNames(), ", "))
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
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &cli.UsageError{Err: err}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != n {
		return nil, cli.Usagef("%s: want %d argument(s), got %d %q (usage: nfsrdma %s %s)", fs.Name(), n, len(pos), pos, strings.TrimPrefix(fs.Name(), "nfsrdma "), commands[strings.TrimPrefix(fs.Name(), "nfsrdma ")].usage)
	}
	return pos, nil
}

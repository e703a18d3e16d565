//go:build linux

package main

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs3"
)

// shownName returns a name from the server as it is safe to print: unchanged when
// it is valid UTF-8 of printable characters (spaces included), else quoted with Go's
// escapes ("nl\nname", "\x1b[2J"), so that a name can neither split a line nor send
// control sequences to the terminal.
func shownName(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || (r != ' ' && !strconv.IsPrint(r)) {
			return strconv.Quote(s)
		}
	}
	return s
}

// typeName names a file type in prose ("a symbolic link").
func typeName(t nfs3.FileType) string {
	switch t {
	case nfs3.TypeReg:
		return "a regular file"
	case nfs3.TypeDir:
		return "a directory"
	case nfs3.TypeBlk:
		return "a block device"
	case nfs3.TypeChr:
		return "a character device"
	case nfs3.TypeLnk:
		return "a symbolic link"
	case nfs3.TypeSock:
		return "a socket"
	case nfs3.TypeFifo:
		return "a named pipe"
	}
	return fmt.Sprintf("a file of type %v", t)
}

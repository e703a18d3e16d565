package exports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileSize bounds an exports file.
const MaxFileSize = 1 << 20

// Table is a parsed exports file: the exports in file order.
type Table struct {
	Exports []Export
}

// Export is one exported directory and the clients that may reach it.
type Export struct {
	// Path is the exported directory, absolute and clean; clients name it in MOUNT.
	Path string
	// MountPath, when set, is the path MOUNT clients name instead of Path. Files
	// cannot set it; programs building a Table may (nfsrdmad's -export-path).
	MountPath string
	// Clients are the client entries in line order.
	Clients []Client
	// FSID is the export's file system id when HasFSID (fsid=N; fsid=root is 0).
	FSID    uint32
	HasFSID bool
	// File and Line say where the export was read ("" and 0 when built by a program).
	File string
	Line int

	byName bool // some client is a host name or a wildcard
}

// Error is a syntax error in an exports file.
type Error struct {
	File      string // the name given to Parse or ParseFile
	Line, Col int    // 1-based; Col counts bytes
	Msg       string // what is wrong, for people
}

// Error implements error: "FILE:LINE:COL: message".
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// ParseFile reads and parses the exports file at name.
func ParseFile(name string) (*Table, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("exports: %w", err)
	}
	defer f.Close()
	b := make([]byte, MaxFileSize+1)
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	if n > MaxFileSize {
		return nil, &Error{File: name, Line: 1, Col: 1, Msg: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}
	}
	return Parse(name, b[:n])
}

// token is one whitespace-separated word of a line, as written.
type token struct {
	raw       string
	line, col int
}

// Parse parses the exports table in data; name is used in errors.
func Parse(name string, data []byte) (*Table, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: name, Line: 1, Col: 1, Msg: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}
	}
	p := parser{file: name, data: data, line: 1, col: 1}
	t := &Table{}
	seen := map[string]int{} // path to its index in t.Exports
	for {
		toks, err := p.logicalLine()
		if err != nil {
			return nil, err
		}
		if toks == nil {
			return t, nil
		}
		if len(toks) == 0 {
			continue
		}
		e, err := p.export(toks)
		if err != nil {
			return nil, err
		}
		if i, dup := seen[e.Path]; dup {
			if err := p.merge(&t.Exports[i], e, toks[0]); err != nil {
				return nil, err
			}
			continue
		}
		seen[e.Path] = len(t.Exports)
		t.Exports = append(t.Exports, *e)
	}
}

type parser struct {
	file      string
	data      []byte
	off       int
	line, col int
}

func (p *parser) errAt(t token, i int, msg string) error {
	return &Error{File: p.file, Line: t.line, Col: t.col + i, Msg: msg}
}

func (p *parser) next() byte {
	c := p.data[p.off]
	p.off++
	if c == '\n' {
		p.line++
		p.col = 1
	} else {
		p.col++
	}
	return c
}

// continuation reports whether a backslash-newline (or backslash-CR-LF) starts at
// the current offset.
func (p *parser) continuation() bool {
	r := p.data[p.off:]
	return len(r) >= 2 && r[0] == '\\' && (r[1] == '\n' || len(r) >= 3 && r[1] == '\r' && r[2] == '\n')
}

// logicalLine returns the tokens of the next logical line (continuations joined,
// comment dropped): nil at the end of the data, empty for a blank line.
func (p *parser) logicalLine() ([]token, error) {
	if p.off >= len(p.data) {
		return nil, nil
	}
	toks := []token{}
	for p.off < len(p.data) {
		c := p.data[p.off]
		switch {
		case c == '\n':
			p.next()
			return toks, nil
		case c == ' ' || c == '\t' || c == '\r':
			p.next()
		case p.continuation():
			for p.next() != '\n' {
			}
		case c == '#':
			for p.off < len(p.data) && p.data[p.off] != '\n' {
				p.next()
			}
		default:
			t, err := p.word()
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
		}
	}
	return toks, nil
}

// word reads one token: up to whitespace, a newline or a continuation, with double
// quotes keeping whitespace inside.
func (p *parser) word() (token, error) {
	t := token{line: p.line, col: p.col}
	start := p.off
	quoted := false
	for p.off < len(p.data) {
		c := p.data[p.off]
		if c == '\n' {
			break
		}
		if !quoted && (c == ' ' || c == '\t' || c == '\r' || p.continuation()) {
			break
		}
		if c == '"' {
			quoted = !quoted
		}
		if c == 0 {
			return t, &Error{File: p.file, Line: p.line, Col: p.col, Msg: "NUL byte"}
		}
		p.next()
	}
	if quoted {
		return t, &Error{File: p.file, Line: p.line, Col: p.col, Msg: "unterminated double quote"}
	}
	t.raw = string(p.data[start:p.off])
	return t, nil
}

// export parses the tokens of one line.
func (p *parser) export(toks []token) (*Export, error) {
	path, err := p.path(toks[0])
	if err != nil {
		return nil, err
	}
	e := &Export{Path: path, File: p.file, Line: toks[0].line}
	defaults := DefaultOptions()
	var fsid fsidSetting
	var fsidTok token
	fsidAt := 0
	setFSID := func(t token, at int, f fsidSetting) error {
		if !f.set {
			return nil
		}
		if fsid.set && fsid.v != f.v {
			return p.errAt(t, at, fmt.Sprintf("fsid=%d differs from fsid=%d given at column %d: fsid belongs to the export, not to a client", f.v, fsid.v, fsidTok.col+fsidAt))
		}
		if !fsid.set {
			fsid, fsidTok, fsidAt = f, t, at
		}
		return nil
	}
	for _, t := range toks[1:] {
		raw := t.raw
		switch {
		case strings.HasPrefix(raw, "-"):
			var f fsidSetting
			if err := p.options(t, 1, raw[1:], &defaults, &f); err != nil {
				return nil, err
			}
			if err := setFSID(t, 1, f); err != nil {
				return nil, err
			}
			continue
		case strings.HasPrefix(raw, "("):
			return nil, p.errAt(t, 0, "options with no client before them: write client(options) with no space, or *(options) for every host")
		case strings.ContainsAny(raw, "\"\\"):
			return nil, p.errAt(t, strings.IndexAny(raw, "\"\\"), "quotes and escapes are allowed only in the path")
		}
		c := Client{Spec: raw, Options: defaults}
		if i := strings.IndexByte(raw, '('); i >= 0 {
			if j := strings.IndexByte(raw, ')'); j >= 0 && j != len(raw)-1 {
				return nil, p.errAt(t, j+1, "unexpected text after the options of client "+raw[:i])
			}
			if !strings.HasSuffix(raw, ")") {
				return nil, p.errAt(t, len(raw), "missing ) after the options of client "+raw[:i])
			}
			c.Spec = raw[:i]
			var f fsidSetting
			if err := p.options(t, i+1, raw[i+1:len(raw)-1], &c.Options, &f); err != nil {
				return nil, err
			}
			if err := setFSID(t, i+1, f); err != nil {
				return nil, err
			}
		} else if j := strings.IndexByte(raw, ')'); j >= 0 {
			return nil, p.errAt(t, j, "unexpected )")
		}
		if msg := c.classify(); msg != "" {
			return nil, p.errAt(t, 0, msg)
		}
		e.byName = e.byName || c.name != ""
		e.Clients = append(e.Clients, c)
	}
	if len(e.Clients) == 0 {
		c := Client{Spec: "*", Kind: Anyone, Options: defaults}
		e.Clients = append(e.Clients, c)
	}
	e.FSID, e.HasFSID = fsid.v, fsid.set
	return e, nil
}

// merge adds the clients of e, a later line of the same path (its first token at),
// to first, as nfs-utils keys its table by path and client: the clients stay in file
// order, and the fsid either line gives is the export's, unless they differ.
func (p *parser) merge(first, e *Export, at token) error {
	if e.HasFSID {
		if first.HasFSID && first.FSID != e.FSID {
			return p.errAt(at, 0, fmt.Sprintf("fsid=%d differs from fsid=%d given for %s on line %d: fsid belongs to the export, not to a client", e.FSID, first.FSID, first.Path, first.Line))
		}
		first.FSID, first.HasFSID = e.FSID, true
	}
	first.Clients = append(first.Clients, e.Clients...)
	first.byName = first.byName || e.byName
	return nil
}

// options applies the comma-separated list (which starts at byte at of t) to o.
func (p *parser) options(t token, at int, list string, o *Options, fsid *fsidSetting) error {
	off := 0
	for _, opt := range strings.Split(list, ",") {
		if strings.ContainsAny(opt, "() ") {
			return p.errAt(t, at+off+strings.IndexAny(opt, "() "), "unexpected character in option "+opt)
		}
		if msg := applyOption(o, fsid, opt); msg != "" {
			return p.errAt(t, at+off, msg)
		}
		off += len(opt) + 1
	}
	return nil
}

// path decodes the path token: double quotes removed, \ooo octal escapes decoded; it
// must be absolute.
func (p *parser) path(t token) (string, error) {
	raw := t.raw
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '"':
			continue
		case '\\':
			if i+3 < len(raw) && isOctal(raw[i+1]) && isOctal(raw[i+2]) && isOctal(raw[i+3]) {
				v := int(raw[i+1]-'0')<<6 | int(raw[i+2]-'0')<<3 | int(raw[i+3]-'0')
				if v == 0 || v > 0xff {
					return "", p.errAt(t, i, "escape "+raw[i:i+4]+" is not a byte from \\001 to \\377")
				}
				b.WriteByte(byte(v))
				i += 3
				continue
			}
			return "", p.errAt(t, i, "a backslash in the path must start a three-digit octal escape such as \\040")
		case '(', ')':
			return "", p.errAt(t, i, "the path must come first on the line, before any client")
		}
		b.WriteByte(c)
	}
	s := b.String()
	if !strings.HasPrefix(s, "/") {
		return "", p.errAt(t, 0, fmt.Sprintf("export path %q is not absolute", s))
	}
	return filepath.Clean(s), nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// Groups returns the client specifications of e, as MOUNT's EXPORT procedure lists
// them.
func (e *Export) Groups() []string {
	g := make([]string, len(e.Clients))
	for i := range e.Clients {
		g[i] = e.Clients[i].Spec
	}
	return g
}

// ClientFor returns a Client for spec with options o, as a program building a Table
// without a file would write spec(o); it returns an error when spec is not a client.
func ClientFor(spec string, o Options) (Client, error) {
	c := Client{Spec: spec, Options: o}
	if msg := c.classify(); msg != "" {
		return Client{}, fmt.Errorf("exports: %s", msg)
	}
	return c, nil
}

// NewExport returns an export of path to clients, as a program builds one without a
// file; path must be absolute.
func NewExport(path string, clients ...Client) (*Export, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("exports: export path %q is not absolute", path)
	}
	e := &Export{Path: filepath.Clean(path), Clients: clients}
	for _, c := range clients {
		e.byName = e.byName || c.name != ""
	}
	return e, nil
}

// String renders t in exports(5) syntax with every option spelled out, one export
// per line (quoted paths with \ooo escapes for spaces, quotes and backslashes).
func (t *Table) String() string {
	var b strings.Builder
	for i := range t.Exports {
		e := &t.Exports[i]
		b.WriteString(quotePath(e.Path))
		for _, c := range e.Clients {
			b.WriteString(" " + c.Spec + "(" + c.Options.String())
			if e.HasFSID {
				fmt.Fprintf(&b, ",fsid=%d", e.FSID)
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func quotePath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '"' || c == '\\' || c == '#' || c == '(' || c == ')' || c >= 0x7f {
			fmt.Fprintf(&b, "\\%03o", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

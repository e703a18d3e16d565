package exports

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultAnonID is the default anonuid and anongid: 65534, "nobody".
const DefaultAnonID = 65534

// MaxAnonID is the largest anonuid and anongid: 4294967294. The next, 4294967295, is
// (uid_t)-1, which is no identity: the kernel's nfsd refuses an export whose
// anonymous uid or gid is not valid, and chown(2) reads -1 as "leave unchanged", so
// that a file a squashed caller creates would keep the server's owner.
const MaxAnonID = 1<<32 - 2

// Options are what one client entry grants.
type Options struct {
	// ReadOnly refuses every modifying procedure (ro, the default; rw clears it).
	ReadOnly bool
	// NoRootSquash trusts root's credentials (no_root_squash); the default,
	// root_squash, maps uid 0 to AnonUID and gid 0 (primary or supplementary) to
	// AnonGID.
	NoRootSquash bool
	// AllSquash maps every caller to AnonUID and AnonGID (all_squash), whatever
	// NoRootSquash says: as in knfsd, root_squash and all_squash are two independent
	// settings, and all_squash wins where both apply.
	AllSquash bool
	// AnonUID and AnonGID are the anonymous identity (default DefaultAnonID).
	AnonUID, AnonGID uint32
	// Async lets the server reply before metadata changes are durable (async);
	// the default, sync, waits.
	Async bool
	// Insecure accepts TCP callers from any source port; the default, secure,
	// requires a port below 1024 (a reserved port, which only root can bind).
	Insecure bool
	// CrossMount serves the file systems mounted below the export (crossmnt, knfsd's
	// NFSEXP_CROSSMOUNT): LOOKUP crosses their mount points, MNT accepts directories
	// on them and their file handles are honoured. The default, nocrossmnt, serves
	// only the objects on the export root's own mount (see package nfsserver).
	CrossMount bool
	// NoHide, given to a client entry of an export that is a mount of its own below
	// another export, lets that client cross into it from the parent export with
	// NFSv3, whether or not the parent says crossmnt (nohide, knfsd's NFSEXP_NOHIDE).
	// The default, hide, leaves it to MNT of its path (NFSv4 clients cross either way).
	NoHide bool
}

// DefaultOptions are knfsd's defaults: ro, root_squash, no_all_squash, sync,
// secure, anonymous identity 65534.
func DefaultOptions() Options {
	return Options{ReadOnly: true, AnonUID: DefaultAnonID, AnonGID: DefaultAnonID}
}

// String renders o as an option list with every option spelled out, as exportfs -v
// does: root_squash or no_root_squash, then all_squash or no_all_squash, ...,
// crossmnt or nocrossmnt, then nohide when set.
func (o Options) String() string {
	var b strings.Builder
	if o.ReadOnly {
		b.WriteString("ro,")
	} else {
		b.WriteString("rw,")
	}
	if o.NoRootSquash {
		b.WriteString("no_root_squash")
	} else {
		b.WriteString("root_squash")
	}
	if o.AllSquash {
		b.WriteString(",all_squash")
	} else {
		b.WriteString(",no_all_squash")
	}
	fmt.Fprintf(&b, ",anonuid=%d,anongid=%d", o.AnonUID, o.AnonGID)
	if o.Async {
		b.WriteString(",async")
	} else {
		b.WriteString(",sync")
	}
	if o.CrossMount {
		b.WriteString(",crossmnt")
	} else {
		b.WriteString(",nocrossmnt")
	}
	if o.Insecure {
		b.WriteString(",insecure")
	} else {
		b.WriteString(",secure")
	}
	if o.NoHide {
		b.WriteString(",nohide")
	}
	return b.String()
}

// fsidSetting is an fsid option seen in a list.
type fsidSetting struct {
	set bool
	v   uint32
}

// applyOption applies one option (name or name=value) to o; it returns a message
// for people when the option is unknown or its value bad.
func applyOption(o *Options, fsid *fsidSetting, opt string) string {
	name, val, hasVal := strings.Cut(opt, "=")
	noVal := func() string {
		if hasVal {
			return fmt.Sprintf("option %q takes no value", name)
		}
		return ""
	}
	switch name {
	case "ro", "rw":
		o.ReadOnly = name == "ro"
		return noVal()
	case "root_squash", "no_root_squash":
		// Independent of all_squash, as in knfsd (NFSEXP_ROOTSQUASH).
		o.NoRootSquash = name == "no_root_squash"
		return noVal()
	case "all_squash", "no_all_squash":
		// Independent of root_squash, as in knfsd (NFSEXP_ALLSQUASH).
		o.AllSquash = name == "all_squash"
		return noVal()
	case "sync", "async":
		o.Async = name == "async"
		return noVal()
	case "secure", "insecure":
		o.Insecure = name == "insecure"
		return noVal()
	case "crossmnt", "nocrossmnt":
		o.CrossMount = name == "crossmnt"
		return noVal()
	case "hide", "nohide":
		o.NoHide = name == "nohide"
		return noVal()
	case "no_subtree_check", "subtree_check", "wdelay", "no_wdelay":
		return noVal()
	case "anonuid", "anongid":
		if !hasVal {
			return fmt.Sprintf("option %s needs a value (%s=N)", name, name)
		}
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			return fmt.Sprintf("option %s=%q: want a number from 0 to %d", name, val, MaxAnonID)
		}
		if n > MaxAnonID {
			return fmt.Sprintf("option %s=%d: that is -1, no identity (as the kernel's nfsd, want 0 to %d)", name, n, MaxAnonID)
		}
		if name == "anonuid" {
			o.AnonUID = uint32(n)
		} else {
			o.AnonGID = uint32(n)
		}
		return ""
	case "fsid":
		if !hasVal {
			return "option fsid needs a value (fsid=N or fsid=root)"
		}
		if val == "root" {
			*fsid = fsidSetting{set: true}
			return ""
		}
		n, err := parseCNumber(val, 32)
		if err != nil {
			return fmt.Sprintf("option fsid=%q: want a number from 0 to 4294967295 (decimal, 0x hexadecimal or 0 octal) or root (UUIDs are not supported)", val)
		}
		*fsid = fsidSetting{set: true, v: uint32(n)}
		return ""
	case "sec":
		if val != "sys" {
			return fmt.Sprintf("option sec=%q: only sec=sys (AUTH_SYS) is supported", val)
		}
		return ""
	case "":
		return "empty option"
	}
	return fmt.Sprintf("unknown option %q", name)
}

// parseCNumber parses val as strtoul(3) with base 0 does, as nfs-utils reads fsid=: 0x
// or 0X and hexadecimal digits, 0 and octal digits, or decimal digits (no sign, no
// space), into an unsigned number of bits bits.
func parseCNumber(val string, bits int) (uint64, error) {
	base, digits := 10, val
	switch {
	case len(val) > 2 && (val[:2] == "0x" || val[:2] == "0X"):
		base, digits = 16, val[2:]
	case len(val) > 1 && val[0] == '0':
		base, digits = 8, val[1:]
	}
	return strconv.ParseUint(digits, base, bits)
}

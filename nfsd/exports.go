//go:build linux

package nfsd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/go-rpcrdma/rpcrdma/metrics"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/exports"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfsserver"
)

// OneLineOptions are the options Config.Export (nfsrdmad -export DIR) exports DIR
// with: the exports(5) line `DIR *(rw,root_squash,sync,insecure)` (async with
// Config.Async, ro with Config.ReadOnly). Every host may mount it and write as the
// uid it claims, except root, which acts as nobody (65534) as under knfsd's default;
// any source port is accepted, since unprivileged clients (the nfsrdma command, test
// programs) cannot bind a reserved one. As without crossmnt under knfsd, file systems
// mounted below DIR are not served.
func OneLineOptions(readOnly, async bool) exports.Options {
	o := exports.DefaultOptions()
	o.ReadOnly, o.Async, o.Insecure = readOnly, async, true
	return o
}

// exportsTable returns the table Run serves: ExportsFile parsed, or the one-line
// export of Config.Export.
func (c *Config) exportsTable() (*exports.Table, error) {
	if c.ExportsFile != "" {
		t, err := exports.ParseFile(c.ExportsFile)
		if err != nil {
			return nil, badString("ExportsFile", c.ExportsFile, "cannot be used", err)
		}
		for _, e := range t.Exports {
			fi, err := os.Stat(e.Path)
			if err == nil && !fi.IsDir() {
				err = errors.New("not a directory")
			}
			if err != nil {
				return nil, badString("ExportsFile", c.ExportsFile, fmt.Sprintf("line %d: export %s cannot be served", e.Line, e.Path), err)
			}
		}
		return t, nil
	}
	abs, err := filepath.Abs(c.Export)
	if err != nil {
		return nil, badString("Export", c.Export, "cannot be served", err)
	}
	star, err := exports.ClientFor("*", OneLineOptions(c.ReadOnly, c.Async))
	if err != nil {
		return nil, err
	}
	e, err := exports.NewExport(abs, star)
	if err != nil {
		return nil, badString("Export", c.Export, "cannot be served", err)
	}
	e.MountPath = c.ExportPath
	return &exports.Table{Exports: []exports.Export{*e}}, nil
}

// reloader re-reads the exports file into the running server.
type reloader struct {
	cfg   *Config
	x     *nfsserver.Exports
	log   hclog.Logger
	stats *metrics.ReloadStats // nil: metrics are off
}

// reload parses the exports file again and applies it; on any error the table in
// force stays and the error says why. Each reload is counted in r.stats, a reload
// asked of a server of -export (no file) as a failure.
func (r *reloader) reload() error {
	err := r.load()
	if r.stats != nil {
		if err != nil {
			r.stats.Failed()
		} else {
			r.stats.Succeeded(time.Now())
		}
	}
	return err
}

// load is reload without the counting.
func (r *reloader) load() error {
	if r.cfg.ExportsFile == "" {
		return errors.New("nfsrdmad: nothing to reload: serving -export, not an exports file")
	}
	t, err := r.cfg.exportsTable()
	if err == nil {
		err = r.x.Load(t)
	}
	if err != nil {
		r.log.Error("exports file not reloaded; the previous table stays in force", "file", r.cfg.ExportsFile, "error", err)
		return err
	}
	r.log.Info("exports file reloaded", "file", r.cfg.ExportsFile, "exports", len(t.Exports))
	return nil
}

// describeExports is one line per export for the start-up summary: directory, mount
// path and client entries.
func describeExports(t *exports.Table) []string {
	var out []string
	for _, e := range t.Exports {
		p := e.MountPath
		if p == "" {
			p = e.Path
		}
		var cs []string
		for _, c := range e.Clients {
			cs = append(cs, c.Spec+"("+c.Options.String()+")")
		}
		out = append(out, fmt.Sprintf("%s as %s to %s", e.Path, p, strings.Join(cs, " ")))
	}
	return out
}

// openToAll returns the path of an export that admits every host ("*"), or "", for
// the start-up warning.
func openToAll(t *exports.Table) string {
	for _, e := range t.Exports {
		for _, c := range e.Clients {
			if c.Kind == exports.Anyone {
				return e.Path
			}
		}
	}
	return ""
}

// defaultResolver is the resolver of host-name clients when Config.Resolver is nil.
var defaultResolver exports.Resolver = net.DefaultResolver

package cli

import (
	"flag"
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
)

// LogFlags are the -log-level and -log-format flags.
type LogFlags struct {
	Level  string // trace, debug, info, warn, error
	Format string // text or json
}

// Register adds -log-level and -log-format to fs, with def as the default level.
func (l *LogFlags) Register(fs *flag.FlagSet, def string) {
	fs.StringVar(&l.Level, "log-level", def, "log `level`: trace, debug, info, warn, error")
	fs.StringVar(&l.Format, "log-format", "text", "log `format`: text (for people) or json (one object per line, for collectors)")
}

// Logger returns a logger named name writing to w at the chosen level and in the
// chosen format, or an error naming the bad flag.
func (l *LogFlags) Logger(name string, w io.Writer) (hclog.Logger, error) {
	lv := hclog.LevelFromString(l.Level)
	if lv == hclog.NoLevel {
		return nil, &UsageError{Err: fmt.Errorf("-log-level %q: want trace, debug, info, warn or error", l.Level)}
	}
	var js bool
	switch l.Format {
	case "text", "":
	case "json":
		js = true
	default:
		return nil, &UsageError{Err: fmt.Errorf("-log-format %q: want text or json", l.Format)}
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: lv, Output: w, JSONFormat: js}), nil
}

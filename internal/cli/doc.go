// Package cli holds what the commands in cmd/ share about being commands: the
// version they print for -version, the exit status a run's outcome maps to (0 for
// -h, 128+N after signal N), the contexts signals cancel, and the -log-level and
// -log-format flags that build their go-hclog logger, and the readiness they report
// to systemd (Notify).
package cli

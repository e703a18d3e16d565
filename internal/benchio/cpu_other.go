//go:build !unix

package benchio

import "time"

// ProcessCPU returns 0: without getrusage(2) the process's CPU time is not known.
func ProcessCPU() time.Duration { return 0 }

// ProcessSwitches returns 0: without getrusage(2) the context switches are not known.
func ProcessSwitches() int64 { return 0 }

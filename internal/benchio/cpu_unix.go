//go:build unix

package benchio

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time the process has used so far, user and system,
// every thread included: for a benchmark whose client and server share the
// process, what both cost. Contention from other processes on the machine
// disturbs it less than it does wall-clock rates. It returns 0 if the kernel
// does not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcessSwitches returns how many times the process's threads have left a CPU so
// far, to wait (voluntary) or preempted (involuntary), every thread included. A
// benchmark that switches far more per operation in some runs than in others is
// handing work between threads differently (PERFORMANCE.md, "The processor kept
// through socket copies"). It returns 0 if the kernel does not say.
func ProcessSwitches() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Nvcsw + ru.Nivcsw)
}

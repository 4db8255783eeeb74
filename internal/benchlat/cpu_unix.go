//go:build unix

package benchlat

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user and system) the process has used,
// so that a benchmark on a shared machine can report the CPU an
// operation costs beside its wall-clock latency.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

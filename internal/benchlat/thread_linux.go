//go:build linux

package benchlat

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// ThreadCPUTime returns the CPU time the calling OS thread has used, in
// nanoseconds: around one operation, with the goroutine locked to its
// thread (runtime.LockOSThread), it is that operation's own CPU, which
// neither other processes nor the runtime's other threads add to.
func ThreadCPUTime() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

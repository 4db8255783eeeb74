//go:build !linux

package benchlat

import "time"

// ThreadCPUTime returns 0 where a thread's CPU clock is not read.
func ThreadCPUTime() time.Duration { return 0 }

package host

import (
	"sync"
	"time"
)

// Clock is where a host reads the time: the wall clock in production, a
// virtual one in tests. A host reads it once per step (a cycle, a sync)
// and passes that instant to every Scheduler call of the step.
type Clock interface{ Now() time.Time }

// WallClock reads time.Now.
type WallClock struct{}

// Now returns the wall-clock time.
func (WallClock) Now() time.Time { return time.Now() }

// ShiftedClock is the wall clock moved forward by the jumps Advance
// makes: a host under test runs against real daemons (whose own times
// are the wall clock's) and the test still decides when a deadline
// passes. The zero value reads the wall clock. It is safe for
// concurrent use.
type ShiftedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the wall-clock time plus every jump so far.
func (c *ShiftedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *ShiftedClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

package fleet

import "time"

// tryPreempt asks for a plan that makes e fit by draining victims not
// already taken this cycle, and accepts it.
func (s *Scheduler) tryPreempt(now time.Time, e *entry, taken map[string]bool, d *Decisions) bool {
	return false
}

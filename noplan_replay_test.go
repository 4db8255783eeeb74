package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fleetsched/fleet/preempt"
)

// A kept answer that no plan exists replays the search's NoPlan only:
// what admission said this cycle (the reason, the booking it waits
// behind, the quota verdict) reads the calendar's holds, which move with
// time while the fleet, the tree and the books stand, so a replay must
// not bring back the booking an earlier cycle named.
func TestReplayedNoPlanKeepsWhatAdmissionSaidThisCycle(t *testing.T) {
	np := &preempt.NoPlan{Workload: "w", Why: preempt.WhyQuota}
	at := time.Date(2026, 11, 1, 0, 9, 0, 0, time.UTC)
	e := &entry{
		wait:   waitVerdict{cycle: 7, at: at, reason: WaitBooking, behind: "book-1"},
		noPlan: noPlanMemo{valid: true, noPlan: np},
	}
	s := &Scheduler{}
	s.replayNoPlan(e)
	assert.Equal(t, waitVerdict{cycle: 7, at: at, reason: WaitBooking, behind: "book-1", noPlan: np}, e.wait)
}

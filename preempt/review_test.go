package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
)

// Hierarchical advantage exempts a candidate from borrowWithinCohort's
// threshold, not from reclaimWithinCohort's priority rule: under
// LowerPriority, a borrower of higher priority is never a victim.
func TestHierarchicalAdvantageKeepsReclaimPriorityRule(t *testing.T) {
	e := newEnv(t, 1, 1, 1, 8, cohort("root", "", 0), cohort("left", "root", 0), cohort("right", "root", 0),
		queue("a", "left", 8, reclaimLP), queue("b", "right", 0, lower))
	e.run("b1", "b", 50, time.Hour, []int{0}, []int{8})
	_, err := victims(t, e, e.req("new", "a", 1, 1, 8, ""), nil)
	require.ErrorIs(t, err, preempt.ErrNoPlan)
}

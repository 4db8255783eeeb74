package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
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

// Hierarchical advantage is decided on subtree quotas and usage as Kueue
// does: a's cohort c holds a's usage plus the request (b lends it 4), so a
// has advantage over d, which borrows that quota from outside c.
func TestHierarchicalAdvantageFromSubtreeQuota(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 4, cohort("r", "", 0), cohort("c", "r", 0),
		queue("a", "c", 4, reclaimAny), queue("b", "c", 4, lower), queue("d", "r", 0, lower))
	e.run("a1", "a", 100, time.Hour, []int{0}, []int{4})
	e.run("d1", "d", 50, time.Hour, []int{1}, []int{4})
	p, err := victims(t, e, e.req("new", "a", 10, 1, 4, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"d1"}, ids(p))
	assert.Equal(t, preempt.Reclaim, p.Victims[0].Reason)
	assert.True(t, p.Borrowing)
}

// Hierarchical advantage needs a cohort of the preemptor's whose subtree
// quota holds its usage plus the request, counting only the local quota
// its queues leave unused: a's usage, 4 GPUs, uses all of a's, so with b
// lending 3 cohort c holds 7 of the 8 and a has no advantage over d. Its
// borrowWithinCohort threshold then leaves d's work alone.
func TestHierarchicalAdvantageCountsOnlyUnusedLocalQuota(t *testing.T) {
	th := int32(10)
	rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
	for _, tc := range []struct {
		name             string
		nominalB, rootNo int64
		want             []string // nil: no plan
	}{
		{name: "c holds 7 of 8: no advantage", nominalB: 3, rootNo: 4},
		{name: "c holds 8: advantage over d", nominalB: 4, rootNo: 0, want: []string{"d1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 3, 4, cohort("r", "", tc.rootNo), cohort("c", "r", 0),
				queue("a", "c", 4, rules), queue("b", "c", tc.nominalB, lower), queue("d", "r", 0, lower))
			e.run("a1", "a", 100, time.Hour, []int{0}, []int{4})
			e.run("d1", "d", 50, time.Hour, []int{1}, []int{4})
			p, err := victims(t, e, e.req("new", "a", 60, 1, 4, ""), nil)
			if tc.want == nil {
				require.ErrorIs(t, err, preempt.ErrNoPlan)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, ids(p))
		})
	}
}

// Below its nominal quota but borrowing once admitted, a preemptor with
// borrowWithinCohort may take other queues' work only below the
// threshold; work above it is taken only if the preemptor then stays
// within its quota, which it cannot here.
func TestBorrowWithinCohortThresholdWhenBelowNominal(t *testing.T) {
	th := int32(10)
	rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
	e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0), queue("a", "c", 4, rules), queue("b", "c", 4, lower))
	e.run("a1", "a", 100, time.Hour, []int{0}, []int{2})
	e.run("b1", "b", 20, time.Hour, []int{0, 1}, []int{2, 4})
	_, err := victims(t, e, e.req("new", "a", 50, 1, 4, ""), nil)
	require.ErrorIs(t, err, preempt.ErrNoPlan)
}

// Under fair sharing the preemptor's share after admission is that of its
// side of the tree with the request added at its queue and carried up
// through the lending limits (Kueue simulates the usage at the queue):
// a keeps 2 GPUs local, so its cohort p borrows 2, not 4, and 2 <= the 3
// that q still borrows after losing b1.
func TestFairSharingPreemptorShareThroughLendingLimit(t *testing.T) {
	a := queue("a", "p", 4, reclaimAny)
	a.Quotas[0].LendingLimit = quota.LimitOf(2)
	e := newEnv(t, 1, 1, 2, 8, cohort("r", "", 5), cohort("p", "r", 0), a,
		cohort("q", "r", 0), queue("b", "q", 2, lower))
	e.run("b1", "b", 0, time.Hour, []int{0}, []int{2})
	e.run("b2", "b", 1, time.Hour, []int{1}, []int{5})
	r := e.req("new", "a", 10, 1, 6, "")
	r.FairSharing = true
	p, err := victims(t, e, r, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"b1"}, ids(p))
	assert.Equal(t, preempt.FairSharing, p.Victims[0].Reason)
}

// borrowWithinCohort Never, below nominal, with hierarchical-advantage
// candidates: Kueue tries the borrowing attempt (own queue and advantage
// candidates) first, so d1 alone goes and a1 is spared.
func TestBorrowNeverTriesAdvantageFirst(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 4, cohort("r", "", 0), cohort("c", "r", 0),
		queue("a", "c", 4, reclaimAny), queue("b", "c", 4, lower), queue("d", "r", 0, lower))
	e.run("a1", "a", 0, time.Hour, []int{0}, []int{2})
	e.run("b1", "b", 0, time.Hour, []int{0}, []int{2})
	e.run("d1", "d", 0, time.Hour, []int{1}, []int{4})
	p, err := victims(t, e, e.req("new", "a", 50, 1, 4, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"d1"}, ids(p))
	assert.True(t, p.Borrowing)
}

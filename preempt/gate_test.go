package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// gateEnv: a (nominal 4) and b (nominal 4, idle, lending) share cohort c;
// a runs a1 on 4 GPUs. A request of 8 GPUs in a is above a's nominal
// quota: it could fit only by evicting a1 and borrowing b's 4.
func gateEnv(t *testing.T, rules quota.Rules) *env {
	e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0), queue("a", "c", 4, rules), queue("b", "c", 4, lower))
	e.run("a1", "a", 0, time.Hour, []int{0}, []int{4})
	return e
}

// Above its nominal quota, with neither borrowWithinCohort, fair sharing
// nor a reclaim below the root to help, a request is answered "does not
// fit" and nothing is evicted, not even lower-priority work of its own
// queue that would let it borrow.
func TestAboveNominalWithoutBorrowingRuleEvictsNothing(t *testing.T) {
	e := gateEnv(t, reclaimAny)
	_, err := victims(t, e, e.req("new", "a", 10, 2, 4, ""), nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.Equal(t, preempt.WhyAboveNominal, np.Why)
	assert.Equal(t, int64(4), np.Limit, "the nominal quota the request exceeds")
	assert.Contains(t, np.Error(), "nominal")
}

// The gate reads the request alone against the nominal quota, as Kueue
// does: a request equal to the nominal quota passes it, even when the
// queue's usage makes it borrow.
func TestRequestAtNominalPassesTheGate(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0), queue("a", "c", 4, reclaimAny), queue("b", "c", 4, lower))
	e.run("a1", "a", 0, time.Hour, []int{0}, []int{4})
	e.run("b1", "b", 5, time.Hour, []int{1}, []int{4})
	p, err := victims(t, e, e.req("new", "a", 10, 1, 4, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a1"}, ids(p))
}

// borrowWithinCohort opens the gate: the preemptor may evict while it
// borrows, so its own lower-priority work goes.
func TestAboveNominalWithBorrowWithinCohortMayEvict(t *testing.T) {
	e := gateEnv(t, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority}})
	p, err := victims(t, e, e.req("new", "a", 10, 2, 4, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a1"}, ids(p))
	assert.True(t, p.Borrowing)
}

// Fair sharing with reclaimWithinCohort other than Never opens the gate.
func TestAboveNominalUnderFairSharingMayEvict(t *testing.T) {
	e := gateEnv(t, reclaimAny)
	r := e.req("new", "a", 10, 2, 4, "")
	r.FairSharing = true
	p, err := victims(t, e, r, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a1"}, ids(p))

	e = gateEnv(t, lower) // reclaimWithinCohort Never: closed again
	r = e.req("new", "a", 10, 2, 4, "")
	r.FairSharing = true
	_, err = victims(t, e, r, nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.Equal(t, preempt.WhyAboveNominal, np.Why)
}

// A cohort below the root whose subtree quota holds the queue's usage
// plus the request opens the gate (Kueue's reclaim within the hierarchy):
// c holds a's 4 plus 8, so a reclaims from d, which borrows c's quota.
func TestAboveNominalWithReclaimBelowTheRootMayEvict(t *testing.T) {
	e := newEnv(t, 1, 1, 3, 4, cohort("r", "", 0), cohort("c", "r", 4),
		queue("a", "c", 4, reclaimAny), queue("b", "c", 4, lower), queue("d", "r", 0, lower))
	e.run("a1", "a", 0, time.Hour, []int{0}, []int{4})
	e.run("d1", "d", 50, time.Hour, []int{1}, []int{4})
	p, err := victims(t, e, e.req("new", "a", 10, 2, 4, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"d1"}, ids(p))
}

// Above its nominal quota with no rule to preempt while borrowing, the
// verdict is the gate's whether or not some workload could be evicted:
// a host that routes on NoPlan.Why sees one answer for one situation.
func TestAboveNominalIsOneVerdictWithOrWithoutCandidates(t *testing.T) {
	for name, evictable := range map[string]bool{"with a candidate": true, "without candidates": false} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0), queue("a", "c", 4, reclaimAny), queue("b", "c", 4, lower))
			prio := int32(20) // not below the preemptor's: no candidate
			if evictable {
				prio = 0
			}
			e.run("a1", "a", prio, time.Hour, []int{0}, []int{4})
			_, err := victims(t, e, e.req("new", "a", 10, 2, 4, ""), nil)
			var np *preempt.NoPlan
			require.ErrorAs(t, err, &np)
			assert.Equal(t, preempt.WhyAboveNominal, np.Why)
		})
	}
}

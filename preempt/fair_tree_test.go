package preempt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// Fair sharing descends through the preemptor's own cohort even when it
// does not borrow: a, kept at its nominal quota by a borrowing limit of
// 0, takes its own lower-priority work although its cohort c1 (a and an
// idle a2) is within its quota.
func TestFairSharingWalksIntoThePreemptorsCohort(t *testing.T) {
	a := queue("a", "c1", 2, fairRules)
	a.Quotas[0].BorrowingLimit = quota.LimitOf(0)
	u := newUnitEnv(t, cohort("r", "", 0), cohort("c1", "r", 0), a, queue("a2", "c1", 4, fairRules),
		cohort("c2", "r", 0), queue("b", "c2", 2, fairRules))
	u.runN("a-low", "a", 0, 1)
	u.runN("a-other", "a", 3, 1)
	req := u.req("in", "a", 2, 1, 1, "")
	req.FairSharing = true
	p, err := preempt.NewSearcher(preempt.Options{}).Victims(u.view(), req, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-low"}, ids(p))
	assert.Equal(t, preempt.InQueue, p.Victims[0].Reason)
}

// Among sibling cohorts and queues under fair sharing, the walk takes
// from the highest share; a tie between cohorts goes to the last listed,
// and a tie between a cohort and a queue to the cohort.
func TestFairSharingRanksCohortsByShare(t *testing.T) {
	for _, c := range []struct {
		name      string
		b, x      int // GPUs used by b (first listed) and x (second)
		bInCohort bool
		want      string
	}{
		{"first cohort borrows more", 2, 1, true, "b1"},
		{"second cohort borrows more", 1, 2, true, "x1"},
		{"equal cohorts: the last listed", 2, 2, true, "x1"},
		{"a queue and a cohort equal: the cohort", 2, 2, false, "x1"},
		{"a queue above a cohort", 2, 1, false, "b1"},
	} {
		bq := queue("b", "r", 0, fairRules)
		nodes := []quota.NodeSpec{cohort("r", "", 0), queue("a", "r", 4, fairRules)}
		if c.bInCohort {
			nodes = append(nodes, cohort("cb", "r", 0))
			bq.Parent = "cb"
		}
		nodes = append(nodes, bq, cohort("cx", "r", 0), queue("x", "cx", 0, fairRules))
		u := newUnitEnv(t, nodes...)
		for i := range c.b {
			u.runN("b"+string(rune('1'+i)), "b", 0, 1)
		}
		for i := range c.x {
			u.runN("x"+string(rune('1'+i)), "x", 0, 1)
		}
		// a is within its nominal quota: each step reclaims the next
		// candidate of the queue the walk reaches, and one GPU is short.
		need := 4 - c.b - c.x + 1
		got := fairVictims(t, u, preempt.Options{}, "a", need)
		assert.Equal(t, map[string]preempt.Reason{c.want: preempt.Reclaim}, got, c.name)
	}
}

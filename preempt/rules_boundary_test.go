package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// WithinQueueLowerOrNewerEqualPriority at its boundaries: strictly lower
// priority always; equal priority only when queued strictly after the
// preemptor (its Submitted, else its start); never higher priority.
func TestLowerOrNewerEqualPriorityBoundaries(t *testing.T) {
	sub := t0.Add(-10 * time.Minute)
	for _, c := range []struct {
		name               string
		prio               int32
		submitted, started time.Time
		victim             bool
	}{
		{"lower priority, queued before", 4, sub.Add(-time.Hour), sub.Add(-time.Hour), true},
		{"equal priority, queued after", 5, sub.Add(time.Second), sub.Add(-time.Hour), true},
		{"equal priority, queued at the same instant", 5, sub, sub.Add(time.Minute), false},
		{"equal priority, queued before", 5, sub.Add(-time.Second), sub.Add(time.Minute), false},
		{"equal priority, no queue time, started after", 5, time.Time{}, sub.Add(time.Second), true},
		{"equal priority, no queue time, started at the instant", 5, time.Time{}, sub, false},
		{"higher priority, queued after", 6, sub.Add(time.Minute), sub.Add(time.Minute), false},
	} {
		u := newUnitEnv(t, queue("a", "", 1, quota.Rules{WithinQueue: quota.WithinQueueLowerOrNewerEqualPriority}))
		r := u.runN("old", "a", c.prio, 1)
		r.Submitted, r.Started = c.submitted, c.started
		req := u.req("in", "a", 5, 1, 1, "")
		req.Submitted = sub
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(u.view(), req, nil)
		if c.victim {
			assert.NoError(t, err, c.name)
			assert.Equal(t, []string{"old"}, ids(p), c.name)
		} else {
			assert.ErrorIs(t, err, preempt.ErrNoPlan, c.name)
		}
	}
}

// A Starved preemptor counts as queued before every candidate: under
// WithinQueueLowerOrNewerEqualPriority work of its priority queued
// before it is a victim too, never higher priority, and no other rule
// changes (WithinQueueLowerPriority keeps equal priorities).
func TestStarvedPreemptorTakesEqualPriorityQueuedBefore(t *testing.T) {
	sub := t0.Add(-10 * time.Minute)
	for _, c := range []struct {
		name   string
		rule   quota.WithinQueue
		prio   int32
		victim bool
	}{
		{"equal priority, queued before", quota.WithinQueueLowerOrNewerEqualPriority, 5, true},
		{"higher priority", quota.WithinQueueLowerOrNewerEqualPriority, 6, false},
		{"LowerPriority keeps equal priority", quota.WithinQueueLowerPriority, 5, false},
	} {
		u := newUnitEnv(t, queue("a", "", 1, quota.Rules{WithinQueue: c.rule}))
		r := u.runN("old", "a", c.prio, 1)
		r.Submitted, r.Started = sub.Add(-time.Hour), sub.Add(-time.Hour)
		req := u.req("in", "a", 5, 1, 1, "")
		req.Submitted, req.Starved = sub, true
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(u.view(), req, nil)
		if c.victim {
			assert.NoError(t, err, c.name)
			assert.Equal(t, []string{"old"}, ids(p), c.name)
		} else {
			assert.ErrorIs(t, err, preempt.ErrNoPlan, c.name)
		}
	}
}

// WithinQueueLowerPriority and reclaimWithinCohort LowerPriority take
// strictly lower priorities: work at the preemptor's priority stays.
func TestLowerPriorityIsStrict(t *testing.T) {
	lowerBoth := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority}
	for _, c := range []struct {
		name   string
		queue  string
		prio   int32
		victim bool
	}{
		{"own queue, one below", "a", 4, true},
		{"own queue, equal", "a", 5, false},
		{"borrower, one below", "b", 4, true},
		{"borrower, equal", "b", 5, false},
	} {
		u := newUnitEnv(t, cohort("c", "", 0), queue("a", "c", 1, lowerBoth), queue("b", "c", 0, lowerBoth))
		u.runN("old", c.queue, c.prio, 1)
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(u.view(), u.req("in", "a", 5, 1, 1, ""), nil)
		if c.victim {
			assert.NoError(t, err, c.name)
			assert.Equal(t, []string{"old"}, ids(p), c.name)
		} else {
			assert.ErrorIs(t, err, preempt.ErrNoPlan, c.name)
		}
	}
}

// borrowWithinCohort's threshold is inclusive, and never lets the
// preemptor take work of its own priority or above while it borrows.
func TestBorrowWithinCohortThresholdBoundaries(t *testing.T) {
	for _, c := range []struct {
		name      string
		threshold int32
		prio      int32
		victim    bool
	}{
		{"at the threshold", 3, 3, true},
		{"one above the threshold", 3, 4, false},
		{"threshold above the preemptor: one below the preemptor", 20, 9, true},
		{"threshold above the preemptor: the preemptor's priority", 20, 10, false},
	} {
		th := c.threshold
		rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny,
			BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
		e := newEnv(t, 1, 1, 3, 8, cohort("c", "", 8), queue("a", "c", 8, rules), queue("b", "c", 8, lower))
		e.run("a1", "a", 10, time.Hour, []int{0}, []int{8})
		e.run("b-lo", "b", c.prio, time.Hour, []int{1}, []int{8})
		e.run("b-hi", "b", 50, time.Hour, []int{2}, []int{8})
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), e.req("new", "a", 10, 1, 8, ""), nil)
		if !c.victim {
			assert.ErrorIs(t, err, preempt.ErrNoPlan, c.name)
			continue
		}
		if assert.NoError(t, err, c.name) {
			assert.Equal(t, []string{"b-lo"}, ids(p), c.name)
			assert.Equal(t, preempt.ReclaimWhileBorrowing, p.Victims[0].Reason, c.name)
		}
	}
}

// A request refused as invalid still names its workload, and one
// without a workload is refused naming none.
func TestInvalidNoPlanNamesTheWorkload(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}))
	r := e.req("new", "a", 10, 1, 8, "")
	r.Queue = 7
	_, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), r, nil)
	var np *preempt.NoPlan
	if assert.ErrorAs(t, err, &np) {
		assert.ErrorIs(t, err, preempt.ErrInvalid)
		assert.Equal(t, "new", np.Workload)
	}
	r.W = nil
	_, err = preempt.NewSearcher(preempt.Options{}).Victims(e.view(), r, nil)
	if assert.ErrorAs(t, err, &np) {
		assert.ErrorIs(t, err, preempt.ErrInvalid)
		assert.Empty(t, np.Workload)
	}
}

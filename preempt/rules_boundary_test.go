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

package preempt_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

var (
	lower      = quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}
	reclaimLP  = quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority}
	reclaimAny = quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny}
)

func victims(t *testing.T, e *env, r preempt.Request, exclude map[string]bool) (preempt.Plan, error) {
	t.Helper()
	before := e.f.String()
	s := preempt.NewSearcher(preempt.Options{})
	p, err := s.Victims(e.f, e.tree, r, e.running, exclude)
	require.Equal(t, before, e.f.String(), "fleet changed")
	return p, err
}

func TestLowerPriorityInQueue(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, lower))
	e.run("hi", "a", 50, time.Hour, []int{0}, []int{8})
	e.run("lo", "a", 10, time.Hour, []int{1}, []int{8})
	p, err := victims(t, e, e.req("new", "a", 20, 1, 8, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"lo"}, ids(p))
	assert.Equal(t, preempt.InQueue, p.Victims[0].Reason)
	assert.Equal(t, t0.Add(preempt.DefaultGrace), p.ReadyBy)

	_, err = victims(t, e, e.req("new", "a", 10, 1, 8, ""), nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.Equal(t, preempt.WhyNoCandidates, np.Why)
	assert.True(t, errors.Is(err, preempt.ErrNoPlan))
}

func TestReclaimOnlyFromBorrowers(t *testing.T) {
	// c: a(8) b(8) x(8): b borrows 8, x is within quota; a reclaims.
	e := newEnv(t, 1, 1, 4, 8, cohort("c", "", 0), queue("a", "c", 8, reclaimAny),
		queue("b", "c", 8, lower), queue("x", "c", 16, lower))
	e.run("b1", "b", 1, time.Hour, []int{0}, []int{8})
	e.run("b2", "b", 2, time.Hour, []int{1}, []int{8})
	e.run("x1", "x", 0, time.Hour, []int{2}, []int{8})
	e.run("x2", "x", 0, time.Hour, []int{3}, []int{8})
	p, err := victims(t, e, e.req("new", "a", 5, 1, 8, ""), nil)
	require.NoError(t, err)
	// b1 is cheaper (lower priority) and b goes back within quota after
	// one eviction, so b2 stays; x, within its quota, is untouchable.
	assert.Equal(t, []string{"b1"}, ids(p))
	assert.Equal(t, preempt.Reclaim, p.Victims[0].Reason)
}

func TestReclaimStopsWhenBackWithinQuota(t *testing.T) {
	// a needs two whole nodes. b borrows 8: evicting b1 brings it back
	// within quota, so b2 no longer qualifies although a second whole
	// node is needed; x is within its quota. No plan.
	e := newEnv(t, 1, 1, 4, 8, cohort("c", "", 0), queue("a", "c", 16, reclaimAny),
		queue("b", "c", 8, lower), queue("x", "c", 8, lower))
	e.run("b1", "b", 1, time.Hour, []int{0}, []int{8})
	e.run("b2", "b", 2, time.Hour, []int{1}, []int{8})
	e.run("x1", "x", 0, time.Hour, []int{2, 3}, []int{4, 4})
	_, err := victims(t, e, e.req("new", "a", 5, 2, 8, ""), nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.Equal(t, preempt.WhyTopology, np.Why)

	// One whole node is enough: b1 alone.
	p, err := victims(t, e, e.req("new", "a", 5, 1, 8, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"b1"}, ids(p))
}

func TestNonCheckpointingAndMinRuntime(t *testing.T) {
	e := newEnv(t, 1, 1, 3, 8, queue("a", "", 24, lower))
	r := e.run("nock", "a", 0, time.Hour, []int{0}, []int{8})
	r.Preemptible = false
	r = e.run("young", "a", 0, time.Minute, []int{1}, []int{8})
	r.MinRuntime = 10 * time.Minute
	e.run("ok", "a", 5, time.Hour, []int{2}, []int{8})
	p, err := victims(t, e, e.req("new", "a", 10, 1, 8, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"ok"}, ids(p))
}

func TestFragmentationFreesWholeNode(t *testing.T) {
	// Two nodes with 1 free GPU each; a 2-GPU pod must go on one node.
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, lower))
	e.run("n0a", "a", 1, time.Hour, []int{0}, []int{4})
	e.run("n0b", "a", 1, time.Hour, []int{0}, []int{3})
	e.run("n1a", "a", 2, 2*time.Hour, []int{1}, []int{7})
	p, err := victims(t, e, e.req("new", "a", 10, 1, 2, ""), nil)
	require.NoError(t, err)
	require.Len(t, p.Victims, 1)
	assert.Equal(t, p.Victims[0].Nodes[0].Node, p.Target.Pods[0].Node)
}

func TestFillBackDropsUnneededVictim(t *testing.T) {
	// Ordering takes the cheap 1-GPU job first, but only the 8-GPU one
	// frees a whole node: the fill-back drops the first.
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, lower))
	e.run("small", "a", 1, time.Hour, []int{0}, []int{1})
	e.run("big", "a", 2, time.Hour, []int{1}, []int{8})
	e.run("rest", "a", 9, time.Hour, []int{0}, []int{7})
	p, err := victims(t, e, e.req("new", "a", 5, 1, 8, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"big"}, ids(p))
}

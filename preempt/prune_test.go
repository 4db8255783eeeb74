package preempt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// What a search never tries: cells it cannot make hold the gang, and
// cells whose cost bound is above the best set's cost.

// TestAvoidedCellIsNeverTried: leaf 0 holds work the preemptor may evict
// but is avoided; leaf 1 holds work above its priority. No leaf can be
// made to hold the gang, which the bounds tell without looking at a
// workload.
func TestAvoidedCellIsNeverTried(t *testing.T) {
	e := newEnv(t, 1, 2, 1, 8, queue("a", "", 64, lower))
	e.run("low", "a", 1, time.Hour, []int{0}, []int{8})
	e.run("high", "a", 50, time.Hour, []int{1}, []int{8})
	r := e.req("new", "a", 10, 2, 4, "leaf")
	s := preempt.NewSearcher(preempt.Options{})
	p, err := s.Victims(e.view(), r, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"low"}, ids(p), "without Avoid leaf 0 is freed")
	r.Avoid = []topology.DomainID{domainAt(t, e.f, "leaf", 0)}
	_, err = s.Victims(e.view(), r, nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.Equal(t, preempt.WhyTopology, np.Why)
	assert.Zero(t, preempt.Looked(s), "the avoided leaf is not tried")
}

// TestWholeLeafTouchingAnAvoidedNodeIsNeverTried: a gang of whole nodes
// that needs every node of a leaf (found by the walk down the topology);
// node 0 is avoided, so leaf 0, whose work the preemptor may evict, can
// never hold the gang, and leaf 1 holds work above its priority.
func TestWholeLeafTouchingAnAvoidedNodeIsNeverTried(t *testing.T) {
	e := newEnv(t, 1, 2, 2, 4, queue("a", "", 64, lower))
	e.run("low0", "a", 1, time.Hour, []int{0}, []int{4})
	e.run("low1", "a", 1, time.Hour, []int{1}, []int{4})
	e.run("high2", "a", 50, time.Hour, []int{2}, []int{4})
	e.run("high3", "a", 50, time.Hour, []int{3}, []int{4})
	r := e.req("new", "a", 10, 2, 4, "leaf")
	s := preempt.NewSearcher(preempt.Options{})
	p, err := s.Victims(e.view(), r, nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"low0", "low1"}, ids(p), "without Avoid leaf 0 is freed")
	r.Avoid = []topology.DomainID{e.f.NodeDomain(0)}
	_, err = s.Victims(e.view(), r, nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.True(t, preempt.Hopeless(s), "leaf 0 is not tried")
}

// TestCellBoundCountsEveryPodsGPUs: two pods of 4 GPUs need all 8 GPUs of
// a leaf's one node, and only 2 of them are held by work the preemptor
// may evict, in either leaf: both bounds are above its priority, so no
// leaf is tried and no workload looked at. One pod of 2 GPUs fits.
func TestCellBoundCountsEveryPodsGPUs(t *testing.T) {
	e := newEnv(t, 1, 2, 1, 8, queue("a", "", 64, lower))
	for n, leaf := range []string{"0", "1"} {
		e.run("low"+leaf, "a", 1, time.Hour, []int{n}, []int{2})
		e.run("high"+leaf, "a", 50, time.Hour, []int{n}, []int{6})
	}
	s := preempt.NewSearcher(preempt.Options{})
	_, err := s.Victims(e.view(), e.req("new", "a", 10, 2, 4, "leaf"), nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.Equal(t, preempt.WhyTopology, np.Why)
	assert.Zero(t, preempt.Looked(s), "no leaf is tried")
	p, err := s.Victims(e.view(), e.req("new", "a", 10, 1, 2, "leaf"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"low0"}, ids(p))
}

// TestDearerLeafIsNeverLookedAt: two leaves of one 64-GPU node, each
// holding work at the same priority: leaf 0 one workload of 64 GPUs, 10
// minutes old; leaf 1 forty of one GPU, about 20 minutes old, on 40 of
// its GPUs. A gang of two 32-GPU pods must clear either. Leaf 1's cost
// bound (every GPU's unsaved time plus the restart overhead) is above
// the cost of leaf 0's set, though without the overhead it would not
// be: the search frees leaf 0 and looks at fewer workloads than one
// that tries every leaf.
func TestDearerLeafIsNeverLookedAt(t *testing.T) {
	e := newEnv(t, 1, 2, 1, 64, queue("a", "", 1000, lower))
	e.run("w0", "a", 1, 10*time.Minute, []int{0}, []int{64})
	for i := range 40 {
		e.run(fmt.Sprintf("v%02d", i), "a", 1, 20*time.Minute+time.Duration(i)*time.Second, []int{1}, []int{1})
	}
	r := e.req("new", "a", 10, 2, 32, "leaf")
	s := preempt.NewSearcher(preempt.Options{})
	p, err := s.Victims(e.view(), r, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"w0"}, ids(p))
	ref := preempt.NewSearcher(preempt.Options{})
	preempt.SetNoBounds(ref, true)
	p2, err := ref.Victims(e.view(), r, nil)
	require.NoError(t, err)
	require.Equal(t, p2, p)
	assert.Equal(t, 41, preempt.Looked(ref))
	assert.Less(t, preempt.Looked(s), 10, "leaf 1's forty workloads are not looked at")
}

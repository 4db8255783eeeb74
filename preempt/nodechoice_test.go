package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Which node a search frees inside a cell: the cheapest room, whoever
// holds it, with node order breaking exact ties.

// zeroCost prices every victim at 0, so that candidates of one priority
// tie on cost and only order criteria after it decide.
type zeroCost struct{}

func (zeroCost) Cost(*preempt.Running, time.Time) float64 { return 0 }

// TestReclaimFreesTheCheapestNodeNotTheEvictionOrderPrefix: b borrows
// and holds both nodes; the preemptor needs no quota back, only a node.
// Eviction order (cost) would take b's two small workloads on node 0
// first; the one larger workload on node 1 costs less than both, so it
// is the victim, although node 1 holds nothing but another queue's work:
// with hierarchical advantage, with borrowWithinCohort (the preemptor
// borrows, b's work is below the threshold) and under fair sharing.
func TestReclaimFreesTheCheapestNodeNotTheEvictionOrderPrefix(t *testing.T) {
	th := int32(3)
	bwc := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
	for _, tc := range []struct {
		name   string
		nomA   int64
		rules  quota.Rules
		fair   bool
		reason preempt.Reason
	}{
		{"advantage", 16, reclaimAny, false, preempt.Reclaim},
		{"borrowWithinCohort", 0, bwc, false, preempt.ReclaimWhileBorrowing},
		{"fair sharing", 0, reclaimAny, true, preempt.FairSharing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 8, cohort("c", "", 0), queue("a", "c", tc.nomA, tc.rules),
				queue("b", "c", 0, lower), queue("x", "c", 24-tc.nomA, lower))
			e.run("o1", "b", 1, 10*time.Minute, []int{0}, []int{4}) // 4 x 780 s
			e.run("o2", "b", 1, 10*time.Minute, []int{0}, []int{4}) // 4 x 780 s
			e.run("o3", "b", 1, 4*time.Minute, []int{1}, []int{8})  // 8 x 420 s
			r := e.req("new", "a", 5, 1, 8, "")
			r.FairSharing = tc.fair
			p, err := victims(t, e, r, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"o3"}, ids(p))
			assert.Equal(t, tc.reason, p.Victims[0].Reason)
			assert.Equal(t, []placement.NodeGPUs{{Node: 1, GPUs: 8}}, p.Target.NodeGPUs())
		})
	}
}

// TestTiedNodesFreeTheLowestNode: two nodes whose room costs the same
// (one priority, a cost model that prices nothing) break the tie by node
// order, also when the second node is already touched by work counted
// as gone and so priced before the domain walk reaches the first.
func TestTiedNodesFreeTheLowestNode(t *testing.T) {
	e := newEnv(t, 1, 2, 2, 8, queue("a", "", 64, lower))
	e.run("w0", "a", 1, time.Hour, []int{0}, []int{8})
	e.run("g", "a", 1, time.Hour, []int{1}, []int{2})
	e.run("w1", "a", 1, time.Hour, []int{1}, []int{6})
	e.run("w2", "a", 1, time.Hour, []int{2}, []int{8})
	e.run("w3", "a", 1, time.Hour, []int{3}, []int{8})
	s := preempt.NewSearcher(preempt.Options{Cost: zeroCost{}})
	p, err := s.Victims(e.view(), e.req("new", "a", 5, 1, 8, ""), map[string]bool{"g": true})
	require.NoError(t, err)
	assert.Equal(t, []string{"w0"}, ids(p))
}

// poolEnv is newEnv's fleet (one spine) with its odd nodes in pool
// "p1", the others in "p0": two groups in every leaf, which a request
// without pools may both use.
func poolEnv(t *testing.T, leaves, nodes, gpus int, qnodes ...quota.NodeSpec) *env {
	spec := topology.Uniform(topology.UniformSpec{
		Levels: []string{"spine", "leaf", "node"}, Fanout: []int{1, leaves, nodes},
		GPUsPerNode: gpus, Flavor: "H100", Pool: "p0"})
	for i := 1; i < len(spec.Nodes); i += 2 {
		spec.Nodes[i].Pool = "p1"
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: qnodes})
	require.NoError(t, err)
	return &env{t: t, f: f, tree: tree}
}

// TestVictimsInEitherPool: a request that names no pool may use both
// groups of the fleet; the victim is the cheapest, in whichever pool it
// runs; a gang stays in one group, so two whole-node pods free two nodes
// of the pool that can hold them. A request naming a pool takes its
// victims there.
func TestVictimsInEitherPool(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pools    []string
		pods     int
		required string
		want     []string
	}{
		{"no pool: the cheapest victim, in p1", nil, 1, "leaf", []string{"p1-young"}},
		{"pool p0: its own victim", []string{"p0"}, 1, "leaf", []string{"p0-old"}},
		{"pool p1", []string{"p1"}, 1, "leaf", []string{"p1-young"}},
		{"no pool, two pods: the pool that can hold both", nil, 2, "", []string{"p1-young", "p1-mid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := poolEnv(t, 2, 2, 8, queue("a", "", 64, lower))
			e.run("p0-old", "a", 1, 2*time.Hour, []int{0}, []int{8})
			e.run("p1-young", "a", 1, time.Minute, []int{1}, []int{8})
			e.run("p0-busy", "a", 9, time.Hour, []int{2}, []int{8})
			e.run("p1-mid", "a", 1, 30*time.Minute, []int{3}, []int{8})
			r := e.req("new", "a", 5, tc.pods, 8, tc.required)
			r.W.Pools = tc.pools
			p, err := victims(t, e, r, nil)
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, ids(p))
		})
	}
}

package preempt_test

import (
	"fmt"
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

// TestNegativePrioritiesStillBoundTheNodeWalk: every workload runs at
// priority -5. Eviction order (cost) takes node 0's two workloads first
// and fits there; the one workload of node 1, in the other leaf, costs
// less than both. The Index's bounds are prices like any other, negative
// too, so the walk opens leaf 1 before it settles on node 0.
func TestNegativePrioritiesStillBoundTheNodeWalk(t *testing.T) {
	e := newEnv(t, 1, 2, 1, 8, queue("a", "", 64, lower))
	e.run("c1", "a", -5, time.Minute, []int{0}, []int{4})               // 4 x 240 s
	e.run("c2", "a", -5, 3*time.Minute, []int{0}, []int{4})             // 4 x 360 s
	e.run("d", "a", -5, time.Minute+30*time.Second, []int{1}, []int{8}) // 8 x 270 s
	p, err := victims(t, e, e.req("new", "a", 0, 1, 8, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"d"}, ids(p))
	assert.Equal(t, []placement.NodeGPUs{{Node: 1, GPUs: 8}}, p.Target.NodeGPUs())
}

// TestReclaimBudgetSpentWhereItBuysTheMostRoom: b borrows 4 GPUs, so
// reclaim may take its work only until b is back within its quota. Its
// cheapest workload fills a node (4 GPUs); taken first, it leaves b
// within quota and the gang's second pod without room. Taking the
// 1-GPU workload first (the fewest of b's GPUs for a pod's room) leaves
// b borrowing, so the 4-GPU one may follow: a plan Kueue's walk in
// eviction order would not find. Every other node holds pinned work.
func TestReclaimBudgetSpentWhereItBuysTheMostRoom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		required string
		leaf     int // the leaf of 2 nodes holding b's work
	}{
		{"no required level", "", 0},
		{"leaf of spine 0", "leaf", 1},
		{"leaf of spine 1", "leaf", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 2, 2, 4, cohort("c", "", 0), queue("a", "c", 8, reclaimAny),
				queue("b", "c", 1, lower), queue("x", "c", 64, lower))
			n0, n1 := 2*tc.leaf, 2*tc.leaf+1
			for n := range 8 {
				if n != n0 && n != n1 {
					e.run(fmt.Sprintf("pinned%d", n), "x", 9, time.Hour, []int{n}, []int{4}).Preemptible = false
				}
			}
			e.run("b-x", "b", 1, time.Minute, []int{n0}, []int{4}) // 4 x 240 s
			e.run("b-y", "b", 1, time.Hour, []int{n1}, []int{1})   // 1 x 3780 s
			p, err := victims(t, e, e.req("new", "a", 5, 2, 4, tc.required), nil)
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{"b-x", "b-y"}, ids(p))
		})
	}
}

// costTable prices each workload by its ID.
type costTable map[string]float64

func (c costTable) Cost(r *preempt.Running, _ time.Time) float64 { return c[r.W.ID] }

// TestTouchedNodeWaitsForCheaperRoomElsewhere: excluded work already
// frees half a pod's room on node 1, where t1 completes it for 28. Node
// 2's v makes the whole room for 25, the cheapest; eviction order (by
// cost) would fit the pod on node 0 for 30. A node whose room is partly
// freed is priced exactly from the start, and the walk still opens the
// rest of the fleet, by the bound for this pod size, before it settles.
func TestTouchedNodeWaitsForCheaperRoomElsewhere(t *testing.T) {
	e := newEnv(t, 1, 1, 3, 8, queue("a", "", 64, lower))
	e.run("u1", "a", 3, time.Hour, []int{0}, []int{2})
	e.run("u2", "a", 3, time.Hour, []int{0}, []int{2})
	e.run("h0", "a", 9, time.Hour, []int{0}, []int{4})
	e.run("g", "a", 9, time.Hour, []int{1}, []int{2})
	e.run("t1", "a", 3, time.Hour, []int{1}, []int{2})
	e.run("h1", "a", 9, time.Hour, []int{1}, []int{4})
	e.run("v", "a", 3, time.Hour, []int{2}, []int{4})
	e.run("h2", "a", 9, time.Hour, []int{2}, []int{4})
	s := preempt.NewSearcher(preempt.Options{Cost: costTable{"u1": 10, "u2": 20, "v": 25, "t1": 28}})
	p, err := s.Victims(e.view(), e.req("new", "a", 5, 1, 4, ""), map[string]bool{"g": true})
	require.NoError(t, err)
	assert.Equal(t, []string{"v"}, ids(p))
	assert.Equal(t, []placement.NodeGPUs{{Node: 2, GPUs: 4}}, p.Target.NodeGPUs())
}

// TestSlotOfTwoBorrowersCountsEachQueuesOwnBudget: node 0's room takes
// one workload of b and one of c, each borrowing queue losing what it
// borrows at most: b1 counts against b's budget only, so c1 still may
// go, and node 0 (24) wins over node 1, whose three cheaper workloads
// (27 in all) eviction order would take first.
func TestSlotOfTwoBorrowersCountsEachQueuesOwnBudget(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 4, cohort("co", "", 0), queue("a", "co", 8, reclaimAny),
		queue("b", "co", 0, lower), queue("c", "co", 0, lower), queue("x", "co", 8, lower))
	e.run("b1", "b", 1, time.Hour, []int{0}, []int{2})
	e.run("c1", "c", 1, time.Hour, []int{0}, []int{2})
	e.run("z1", "b", 1, time.Hour, []int{1}, []int{1})
	e.run("z2", "b", 1, time.Hour, []int{1}, []int{1})
	e.run("z3", "b", 1, time.Hour, []int{1}, []int{2})
	s := preempt.NewSearcher(preempt.Options{Cost: costTable{"b1": 12, "c1": 12, "z1": 9, "z2": 9, "z3": 9}})
	p, err := s.Victims(e.view(), e.req("new", "a", 5, 1, 4, ""), nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"b1", "c1"}, ids(p))
	assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 4}}, p.Target.NodeGPUs())
}

// TestNodeLevelPodFreesTheCheapestNode: a pod that must sit on one node
// needs a node freed. Eviction order (cost) would take node 1's two
// small workloads; node 2's one workload loses less than both and is
// the victim. Node 0, half free, or free but inside an avoided domain,
// is no room for the pod and changes nothing.
func TestNodeLevelPodFreesTheCheapestNode(t *testing.T) {
	for _, avoidFree := range []bool{false, true} {
		t.Run(fmt.Sprintf("node 0 free and avoided %v", avoidFree), func(t *testing.T) {
			e := newEnv(t, 1, 1, 3, 8, queue("a", "", 64, lower))
			if !avoidFree {
				e.run("pinned", "a", 9, time.Hour, []int{0}, []int{4}).Preemptible = false
			}
			e.run("c1", "a", 1, time.Minute, []int{1}, []int{4})               // 4 x 240 s
			e.run("c2", "a", 1, 3*time.Minute, []int{1}, []int{4})             // 4 x 360 s
			e.run("d", "a", 1, time.Minute+30*time.Second, []int{2}, []int{8}) // 8 x 270 s
			r := e.req("new", "a", 5, 1, 8, "node")
			if avoidFree {
				r.Avoid = []topology.DomainID{e.f.NodeDomain(0)}
			}
			p, err := victims(t, e, r, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"d"}, ids(p))
			assert.Equal(t, []placement.NodeGPUs{{Node: 2, GPUs: 8}}, p.Target.NodeGPUs())
		})
	}
}

// TestFleetOfNodesAloneFreesTheCheapestNode: a fleet whose only level is
// the node (every node right under the fleet) is searched as any other:
// a pod of a whole node, or of half of one, frees the node whose work
// costs least, the first node here.
func TestFleetOfNodesAloneFreesTheCheapestNode(t *testing.T) {
	for _, gpus := range []int{4, 2} {
		t.Run(fmt.Sprintf("%d-GPU pod", gpus), func(t *testing.T) {
			f, err := topology.New(topology.Uniform(topology.UniformSpec{
				Levels: []string{"node"}, Fanout: []int{2}, GPUsPerNode: 4, Flavor: "H100"}))
			require.NoError(t, err)
			tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{queue("a", "", 16, lower)}})
			require.NoError(t, err)
			e := &env{t: t, f: f, tree: tree}
			e.run("young", "a", 0, time.Minute, []int{0}, []int{4})
			e.run("old", "a", 0, time.Hour, []int{1}, []int{4})
			p, err := victims(t, e, e.req("new", "a", 5, 1, gpus, "node"), nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"young"}, ids(p))
			assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: gpus}}, p.Target.NodeGPUs())
		})
	}
}

// TestBorrowingPreemptorFreesTheRoomOfLowestPriorityWhoeverHoldsIt: a,
// at its nominal quota, asks for a whole node, which it can only borrow
// or make by evicting its own lower-priority work on node 0. b borrows
// 12 GPUs: half of node 1 (priority 0), the other half (priority
// "high"), and half of node 2 beside x's work, which is within x's quota
// and no victim. Kueue's order puts other ClusterQueues' candidates
// before priority: it removes b's work, priority 0 first, until node 1
// is free, and gives back what is not needed: b's half-nodes of node 1.
// fleet takes other queues' work first for quota too, but frees the
// room whose highest victim priority is lowest, whoever holds it:
// node 0 when a's own work is below b's, and Kueue's room when it is
// not. A listed difference from Kueue (preempt's package doc,
// "Topology").
func TestBorrowingPreemptorFreesTheRoomOfLowestPriorityWhoeverHoldsIt(t *testing.T) {
	bwc := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority}}
	for _, tc := range []struct {
		name   string
		high   int32 // the priority of b's other half of node 1
		want   []string
		reason preempt.Reason
	}{
		{"own work below the borrower's", 4, []string{"own"}, preempt.InQueue},
		{"own work above the borrower's", 0, []string{"b1", "b3"}, preempt.ReclaimWhileBorrowing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 3, 8, cohort("c", "", 0), queue("a", "c", 8, bwc),
				queue("b", "c", 0, lower), queue("x", "c", 16, lower))
			e.run("own", "a", 1, time.Minute, []int{0}, []int{8})
			e.run("b1", "b", 0, time.Hour, []int{1}, []int{4})
			e.run("b3", "b", tc.high, time.Hour, []int{1}, []int{4})
			e.run("b2", "b", 0, time.Hour, []int{2}, []int{4})
			e.run("x", "x", 0, time.Hour, []int{2}, []int{4})
			p, err := victims(t, e, e.req("new", "a", 5, 1, 8, ""), nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, ids(p))
			assert.Equal(t, tc.reason, p.Victims[0].Reason)
		})
	}
}

// TestWholeEvictionOfOneElasticWorkloadCountsAgainstTheNextOnesBudget:
// node 0 holds one pod each of ea and eb (elastic, in queue x, their
// surplus pods on nodes 1 and 2), one of c (the preemptor's queue) and a
// pinned one; a 2-GPU pod needs two of the four gone. Node 0's price
// counts ea's whole eviction, its rest bringing its surplus along, and
// the two GPUs ea gives back are what x borrows: eb is then no longer
// reclaimable, node 0's room takes ea and c (4), and node 3's d (3.4) is
// cheaper. While x still borrows a GPU after ea, eb may go too, and node
// 0's room takes ea and eb (2), each giving up its pod there.
func TestWholeEvictionOfOneElasticWorkloadCountsAgainstTheNextOnesBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		nomX int64 // x holds 11 GPUs
		want []victimSummary
		node topology.NodeID
	}{
		{"x back at its quota after ea: d's node", 9, []victimSummary{{ID: "d"}}, 3},
		{"x still borrowing after ea: ea and eb shrink", 8, []victimSummary{{ID: "ea", Pods: []int{0}}, {ID: "eb", Pods: []int{0}}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 4, 4, cohort("co", "", 0), queue("a", "co", 10, reclaimAny), queue("x", "co", tc.nomX, lower))
			elastic(e.run("ea", "x", 0, time.Hour, []int{0, 1}, []int{1, 1}), 1)
			elastic(e.run("eb", "x", 0, time.Hour, []int{0, 2}, []int{1, 1}), 1)
			e.run("c", "a", 0, time.Hour, []int{0}, []int{1})
			e.run("d", "a", 0, time.Hour, []int{3}, []int{4})
			for n, gpus := range []int{1, 3, 3} {
				e.run(fmt.Sprintf("pinned%d", n), "x", 0, time.Hour, []int{n}, []int{gpus}).Preemptible = false
			}
			s := preempt.NewSearcher(preempt.Options{Cost: costTable{"ea": 0.5, "eb": 0.5, "c": 3, "d": 3.4}})
			p, err := s.Victims(e.view(), e.req("new", "a", 5, 1, 2, ""), nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
			assert.Equal(t, tc.node, p.Target.Pods[0].Node)
		})
	}
}

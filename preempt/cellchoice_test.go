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

// Which cell a search frees, and which set it keeps there: bounds that
// never rule out the best cell, Kueue's own walk kept when the node walk
// fails, warm nodes before cost.

// warmAt lists the same warm nodes for every model.
type warmAt []topology.NodeID

func (w warmAt) WarmNodes(string) []topology.NodeID { return w }

// TestPartialPodsBoundCountsFreeAndGoneRoom: a pod smaller than a node
// fits a node once its free GPUs plus those of work counted as gone plus
// the victims' reach the pod. The bound on a cell subtracts both from
// the pod's GPUs, so the node that needs one small victim is kept and
// wins over a node whose whole load must go.
func TestPartialPodsBoundCountsFreeAndGoneRoom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gone    bool // node 0's room comes from excluded work, not free GPUs
		exclude map[string]bool
	}{
		{name: "free room"},
		{name: "room of excluded work", gone: true, exclude: map[string]bool{"gone": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 8, queue("a", "", 64, lower))
			if tc.gone {
				e.run("gone", "a", 9, time.Hour, []int{0}, []int{4})
			}
			e.run("small", "a", 1, time.Hour, []int{0}, []int{2})
			e.run("busy", "a", 9, time.Hour, []int{0}, []int{2})
			e.run("whole", "a", 1, 2*time.Hour, []int{1}, []int{8})
			p, err := victims(t, e, e.req("new", "a", 5, 1, 6, "node"), tc.exclude)
			require.NoError(t, err)
			assert.Equal(t, []string{"small"}, ids(p))
			assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 6}}, p.Target.NodeGPUs())
		})
	}
}

// TestGangOfEveryNodeClearsTheFleet: a gang of whole-node pods, as many
// as the fleet has nodes, without a required level, clears every node;
// with one node's work beyond the rules there is no plan.
func TestGangOfEveryNodeClearsTheFleet(t *testing.T) {
	e := newEnv(t, 1, 2, 1, 8, queue("a", "", 64, lower))
	e.run("w0", "a", 1, time.Hour, []int{0}, []int{4})
	e.run("w1", "a", 2, time.Hour, []int{1}, []int{8})
	p, err := victims(t, e, e.req("new", "a", 5, 2, 8, ""), nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"w0", "w1"}, ids(p))

	_, err = victims(t, e, e.req("new", "a", 2, 2, 8, ""), nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.Equal(t, preempt.WhyTopology, np.Why)
}

// TestKueueWalkFindsWhatTheNodeWalkSpends: b may lose one more GPU
// before it stops borrowing. The node walk frees the lowest node first
// when prices tie, spends b's budget on its 1-GPU workload and then
// cannot free a second GPU; Kueue's walk in eviction order takes b's
// 4-GPU workload first (its ID comes first), which frees the room at
// once. The plan is Kueue's, for a gang anywhere in the fleet and for
// one that must sit in a leaf (leaf 0 holds pinned work). For the leaf,
// Kueue's walk runs over the leaf's own candidates: b's workload in leaf
// 0, first in eviction order, would spend the budget on no room there.
func TestKueueWalkFindsWhatTheNodeWalkSpends(t *testing.T) {
	for _, tc := range []struct {
		required string
		decoy    bool
	}{{"", false}, {"leaf", false}, {"leaf", true}} {
		t.Run(fmt.Sprintf("required %q, b in leaf 0 %v", tc.required, tc.decoy), func(t *testing.T) {
			nomB := int64(7)
			if tc.decoy {
				nomB = 8
			}
			e := newEnv(t, 1, 2, 2, 4, cohort("c", "", 0), queue("a", "c", 8, reclaimAny), queue("b", "c", nomB, lower),
				queue("x", "c", 8, lower))
			e.run("x-pinned1", "x", 0, time.Hour, []int{1}, []int{4}).Preemptible = false
			if tc.decoy {
				e.run("x-pinned0", "x", 0, time.Hour, []int{0}, []int{3}).Preemptible = false
				e.run("b0-decoy", "b", 4, time.Hour, []int{0}, []int{1})
			} else {
				e.run("x-pinned0", "x", 0, time.Hour, []int{0}, []int{4}).Preemptible = false
			}
			e.run("b-pinned", "b", 0, time.Hour, []int{2}, []int{3}).Preemptible = false
			e.run("b2-small", "b", 4, time.Hour, []int{2}, []int{1})
			e.run("b1-big", "b", 4, time.Hour, []int{3}, []int{4})
			s := preempt.NewSearcher(preempt.Options{Cost: zeroCost{}})
			// The same Searcher twice: what one search marked does not
			// hide candidates from the next.
			for range 2 {
				p, err := s.Victims(e.view(), e.req("new", "a", 5, 2, 1, tc.required), nil)
				require.NoError(t, err)
				assert.Equal(t, []string{"b1-big"}, ids(p))
				assert.Equal(t, preempt.Reclaim, p.Victims[0].Reason)
			}
		})
	}
}

// TestWarmNodeBeforeCheaperVictim: quota needs one victim back; eviction
// order takes the cheaper one, on a cold node. A replica naming its
// model prefers a warm node at the same priority, though it loses more
// work, and goes there; at a higher priority the warm node is not
// worth it.
func TestWarmNodeBeforeCheaperVictim(t *testing.T) {
	for _, tc := range []struct {
		name     string
		warmPrio int32
		want     string
		node     topology.NodeID
	}{
		{"same priority: the warm node", 1, "on-warm", 1},
		{"higher priority on the warm node: the cold one", 2, "on-cold", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, queue("a", "", 8, lower))
			e.run("on-cold", "a", 1, time.Minute, []int{0}, []int{4})
			e.run("on-warm", "a", tc.warmPrio, time.Hour, []int{1}, []int{4})
			r := e.req("new", "a", 5, 1, 4, "")
			r.W.Model = "llm"
			s := preempt.NewSearcher(preempt.Options{Placement: placement.Options{Warm: warmAt{1}}})
			p, err := s.Victims(e.view(), r, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{tc.want}, ids(p))
			assert.Equal(t, []placement.NodeGPUs{{Node: tc.node, GPUs: 4}}, p.Target.NodeGPUs())
		})
	}
}

// TestCellCheaperByLessThanASecondWins: two leaves to clear whole tie on
// priority; leaf 1's single workload started half a second later, so it
// loses 4 GPU-seconds less than leaf 0's two. The Index's bound on the
// price of clearing a leaf rounds unsaved time down, so leaf 1 is
// neither put after leaf 0 nor pruned by leaf 0's cost: it wins.
func TestCellCheaperByLessThanASecondWins(t *testing.T) {
	e := newEnv(t, 1, 2, 1, 8, queue("a", "", 64, lower))
	e.run("l0-a", "a", 1, 10*time.Minute, []int{0}, []int{4})
	e.run("l0-b", "a", 1, 10*time.Minute, []int{0}, []int{4})
	e.run("l1", "a", 1, 10*time.Minute-500*time.Millisecond, []int{1}, []int{8})
	p, err := victims(t, e, e.req("new", "a", 5, 1, 8, "leaf"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"l1"}, ids(p))
	assert.InDelta(t, 8*779.5, p.LostGPUSeconds, 1e-6)
}

// TestFreeNodeNeedsNoVictims: a whole-node pod that must sit on one node
// fits a free node as it is: a plan without victims, also when every
// other node is held by work no rule lets it take.
func TestFreeNodeNeedsNoVictims(t *testing.T) {
	e := newEnv(t, 1, 1, 3, 8, queue("a", "", 64, lower))
	e.run("hi0", "a", 9, time.Hour, []int{0}, []int{8})
	e.run("hi2", "a", 9, time.Hour, []int{2}, []int{4})
	p, err := victims(t, e, e.req("new", "a", 5, 1, 8, "node"), nil)
	require.NoError(t, err)
	assert.Nil(t, p.Victims)
	assert.Equal(t, []placement.NodeGPUs{{Node: 1, GPUs: 8}}, p.Target.NodeGPUs())
	assert.Equal(t, t0, p.ReadyBy)
}

// TestAvoidedSpineLeavesTheOtherSpinesLeaves: with spine 1 avoided, a
// leaf gang frees room in a leaf of spine 0; the cheaper of its two
// leaves is leaf 1.
func TestAvoidedSpineLeavesTheOtherSpinesLeaves(t *testing.T) {
	e := newEnv(t, 2, 2, 2, 8, queue("a", "", 64, lower))
	e.run("l0-n0", "a", 1, time.Hour, []int{0}, []int{8})
	e.run("l0-n1", "a", 1, time.Hour, []int{1}, []int{8})
	e.run("l1-n2", "a", 1, time.Minute, []int{2}, []int{8})
	e.run("l1-n3", "a", 9, time.Hour, []int{3}, []int{8})
	r := e.req("new", "a", 5, 1, 8, "leaf")
	r.Avoid = []topology.DomainID{domainAt(t, e.f, "spine", 1)}
	p, err := victims(t, e, r, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"l1-n2"}, ids(p))
	assert.Equal(t, []placement.NodeGPUs{{Node: 2, GPUs: 8}}, p.Target.NodeGPUs())
}

// TestPartialPodsTakeTheLeafOfLowerVictims: two 4-GPU pods fill a
// 2-node leaf only half. Leaf 0 holds the pods' room at priority 1 (its
// priority-9 halves stay), leaf 1 only at priority 3; clearing leaf 0
// whole would cost priority 9, which is no bound on pods that need half
// of it: leaf 0 wins.
func TestPartialPodsTakeTheLeafOfLowerVictims(t *testing.T) {
	e := newEnv(t, 1, 2, 2, 8, queue("a", "", 64, lower))
	e.run("l0-lo0", "a", 1, time.Hour, []int{0}, []int{4})
	e.run("l0-hi0", "a", 9, time.Hour, []int{0}, []int{4})
	e.run("l0-lo1", "a", 1, time.Hour, []int{1}, []int{4})
	e.run("l0-hi1", "a", 9, time.Hour, []int{1}, []int{4})
	e.run("l1-n2", "a", 3, time.Minute, []int{2}, []int{8})
	e.run("l1-n3", "a", 3, time.Minute, []int{3}, []int{8})
	p, err := victims(t, e, e.req("new", "a", 5, 2, 4, "leaf"), nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"l0-lo0", "l0-lo1"}, ids(p))
}

// TestCostBoundCountsTheRequestsPoolAndTheCellsNodes: a 6-GPU pod of
// pool p0 in one leaf. Leaf 0's p0 node has 4 GPUs free and needs only
// its cheap 2-GPU workload, not the dear one beside it; leaf 1's needs
// most of an 8-GPU workload that costs more than the cheap one and less
// than both. The bound on leaf 0's price counts the free GPUs of the
// request's pool and the GPUs its candidates hold on the leaf's nodes,
// so leaf 0 is tried first and wins.
func TestCostBoundCountsTheRequestsPoolAndTheCellsNodes(t *testing.T) {
	e := poolEnv(t, 2, 2, 8, queue("a", "", 64, lower))
	pin := func(id string, n int) { e.run(id, "a", 9, time.Hour, []int{n}, []int{8}).Preemptible = false }
	pin("p1-n1", 1)
	pin("p1-n3", 3)
	e.run("cheap", "a", 1, 10*time.Minute, []int{0}, []int{2}) // 2 x 780 s
	e.run("dear", "a", 1, 2*time.Hour, []int{0}, []int{2})     // 2 x 7380 s
	e.run("mid", "a", 1, 5*time.Minute, []int{2}, []int{8})    // 8 x 480 s
	r := e.req("new", "a", 5, 1, 6, "leaf")
	r.W.Pools = []string{"p0"}
	p, err := victims(t, e, r, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"cheap"}, ids(p))
	assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 6}}, p.Target.NodeGPUs())
}

// TestFreeLeafSparesWhatQuotaDoesNotNeed: quota needs one GPU back, and
// the cheapest victim for it frees a GPU on a full leaf. Leaf 1 has room
// for the pod as it is, so that one victim is the plan, whether leaf 0
// could be freed too (its large workload would also do for quota) or
// holds pinned work.
func TestFreeLeafSparesWhatQuotaDoesNotNeed(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		t.Run(fmt.Sprintf("leaf 0 pinned %v", pinned), func(t *testing.T) {
			e := newEnv(t, 1, 2, 1, 8, queue("a", "", 15, lower))
			e.run("q", "a", 1, time.Minute, []int{0}, []int{1})
			e.run("r", "a", 1, time.Hour, []int{0}, []int{7}).Preemptible = !pinned
			e.run("pinned", "a", 1, time.Hour, []int{1}, []int{4}).Preemptible = false
			p, err := victims(t, e, e.req("new", "a", 5, 1, 4, "leaf"), nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"q"}, ids(p))
			assert.Equal(t, []placement.NodeGPUs{{Node: 1, GPUs: 4}}, p.Target.NodeGPUs())
		})
	}
}

// TestNonUniformLeavesBoundEachLeafByItsOwnNodes: leaf 0 has two nodes,
// leaf 1 one. A one-node pod that must sit in a leaf needs one node of
// leaf 0 freed, not the whole leaf (whose second node holds priority-9
// work): leaf 0's priority-1 victim wins over leaf 1's priority-3 one.
func TestNonUniformLeavesBoundEachLeafByItsOwnNodes(t *testing.T) {
	spec := topology.Spec{Levels: []string{"leaf", "node"}, Nodes: []topology.NodeSpec{
		{Name: "n0", Path: []string{"l0"}, GPUs: 8, Flavor: "H100"},
		{Name: "n1", Path: []string{"l0"}, GPUs: 8, Flavor: "H100"},
		{Name: "n2", Path: []string{"l1"}, GPUs: 8, Flavor: "H100"},
	}}
	f, err := topology.New(spec)
	require.NoError(t, err)
	tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{queue("a", "", 64, lower)}})
	require.NoError(t, err)
	e := &env{t: t, f: f, tree: tree}
	e.run("l0-lo", "a", 1, time.Hour, []int{0}, []int{8})
	e.run("l0-hi", "a", 9, time.Hour, []int{1}, []int{8})
	e.run("l1-mid", "a", 3, time.Minute, []int{2}, []int{8})
	p, err := victims(t, e, e.req("new", "a", 5, 1, 8, "leaf"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"l0-lo"}, ids(p))
}

// TestCostBoundCountsRoomOfExcludedWork: a 6-GPU pod in one leaf. On
// leaf 0, excluded work frees 4 GPUs, so only the cheap 2-GPU workload
// beside it must go, not the dear one; leaf 1 needs most of a workload
// that costs more than the cheap one and less than both. The bound on
// leaf 0's price counts the excluded work's GPUs as freed: leaf 0 is
// not put after leaf 1 nor pruned by its cost, and wins.
func TestCostBoundCountsRoomOfExcludedWork(t *testing.T) {
	e := newEnv(t, 1, 2, 1, 8, queue("a", "", 64, lower))
	e.run("gone", "a", 9, time.Hour, []int{0}, []int{4})
	e.run("cheap", "a", 1, 10*time.Minute, []int{0}, []int{2}) // 2 x 780 s
	e.run("dear", "a", 1, 2*time.Hour, []int{0}, []int{2})     // 2 x 7380 s
	e.run("mid", "a", 1, 5*time.Minute, []int{1}, []int{8})    // 8 x 480 s
	p, err := victims(t, e, e.req("new", "a", 5, 1, 6, "leaf"), map[string]bool{"gone": true})
	require.NoError(t, err)
	assert.Equal(t, []string{"cheap"}, ids(p))
	assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 6}}, p.Target.NodeGPUs())
}

// TestWarmNodesOutsideTheFleetWarmNothing: a Warm source may name nodes
// the fleet does not have (a node index past the last, a negative one);
// they warm no node, and the search chooses as it would without them,
// still preferring a warm node of the fleet named beside them.
func TestWarmNodesOutsideTheFleetWarmNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		warm warmAt
		want string
	}{
		{"no warm node", nil, "on-cold"},
		{"the node past the last", warmAt{2}, "on-cold"},
		{"a negative node", warmAt{-1}, "on-cold"},
		{"outside nodes beside a warm one", warmAt{2, -1, 1}, "on-warm"},
		{"a warm node listed twice", warmAt{1, 1}, "on-warm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, queue("a", "", 8, lower))
			e.run("on-cold", "a", 1, time.Minute, []int{0}, []int{4})
			e.run("on-warm", "a", 1, time.Hour, []int{1}, []int{4})
			r := e.req("new", "a", 5, 1, 4, "")
			r.W.Model = "llm"
			s := preempt.NewSearcher(preempt.Options{Placement: placement.Options{Warm: tc.warm}})
			p, err := s.Victims(e.view(), r, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{tc.want}, ids(p))
		})
	}
}

// TestQuotaTakesTheShortestPrefixOfDrainingWork: the queue is 1 GPU
// short of quota for the request, and its draining work comes first in
// eviction order: "drain-a" (1 GPU, priority 0) and "drain-b" (2 GPUs,
// priority 1) on node 2 of leaf 1, "drain-c" (3 GPUs, priority 2) on node
// 0 of leaf 0. The quota victims are the shortest prefix of that order
// that makes quota fit, drain-a alone; each leaf then needs one draining
// workload for the 2-GPU pod, sets that tie but for their leaf, and the
// lower leaf wins.
func TestQuotaTakesTheShortestPrefixOfDrainingWork(t *testing.T) {
	e := newEnv(t, 1, 2, 2, 4, queue("a", "", 16, lower))
	e.run("drain-c", "a", 2, 34*time.Minute, []int{0}, []int{3}).Draining = true
	e.run("high-1", "a", 4, time.Hour, []int{1}, []int{4})
	e.run("drain-a", "a", 0, time.Minute, []int{2}, []int{1}).Draining = true
	e.run("drain-b", "a", 1, 2*time.Minute, []int{2}, []int{2}).Draining = true
	e.run("run-2", "a", 2, 25*time.Minute, []int{2}, []int{1})
	e.run("high-3", "a", 4, time.Hour, []int{3}, []int{4})
	p, err := victims(t, e, e.req("new", "a", 3, 1, 2, "leaf"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"drain-c"}, ids(p))
	assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 2}}, p.Target.NodeGPUs())
}

// TestWholeCellsOfOneBoundAreFilledCheapestCostBoundFirst: six leaves of
// one node of 4 GPUs, the gang one whole node of leaf level; node 3 is
// free, so the victims are those quota needs (3 GPUs back from b, which
// borrows). Eviction order picks w5 for it (b, priority 3, 3 GPUs, 4
// minutes old), and leaf 2 (bound 2) ends on w5 too. Leaves 0, 1, 4 and
// 5 share the bound 3 (priority of their dearest node), and come in one
// front ordered by cost bound: leaf 4
// (w5's) first, whose set is w5 alone; the others' cost bounds are above
// it and they are not filled. Leaf 1 filled would end, after fill-back, on
// a's own w3 (priority 2, 5 GPUs, nearly two hours old) with the gang on
// node 3 still: ranked below w5 by priority, at 23 times its cost.
func TestWholeCellsOfOneBoundAreFilledCheapestCostBoundFirst(t *testing.T) {
	e := newEnv(t, 2, 3, 1, 4, cohort("c", "", 0), queue("a", "c", 15, reclaimAny), queue("b", "c", 5, lower))
	e.run("w0", "b", 3, 114*time.Minute, []int{0}, []int{4})
	e.run("w1", "b", 0, 24*time.Minute, []int{1}, []int{1})
	e.run("w2", "b", 3, 104*time.Minute, []int{1}, []int{1})
	e.run("w3", "a", 2, 107*time.Minute, []int{1, 2}, []int{2, 3})
	e.run("w4", "a", 1, 99*time.Minute, []int{2}, []int{1})
	e.run("w5", "b", 3, 4*time.Minute, []int{4}, []int{3})
	e.run("w6", "a", 3, 19*time.Minute, []int{5}, []int{4})
	req := e.req("new", "a", 4, 1, 4, "leaf")
	p, err := preempt.NewSearcher(preempt.Options{RestartOverhead: 4 * time.Minute}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"w5"}, ids(p))
	assert.InDelta(t, 1440, p.LostGPUSeconds, 1e-6)
	assert.Equal(t, []placement.NodeGPUs{{Node: 3, GPUs: 4}}, p.Target.NodeGPUs())
}

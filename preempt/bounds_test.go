package preempt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// TestBoundsKeepThePlan checks that pruning domains by lower bounds never
// changes the plan: the same answer as trying every domain.
func TestBoundsKeepThePlan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, exclude := instance(t, rapid.Bool().Draw(t, "single"))
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		ref := preempt.NewSearcher(preempt.Options{})
		preempt.SetNoBounds(ref, true)
		p2, err2 := ref.Victims(e.view(), req, exclude)
		require.Equal(t, err2, err)
		require.Equal(t, p2, p)
	})
}

func TestBoundsKeepThePlanOnShapes(t *testing.T) {
	for _, build := range []func(int, shapes.Fill, uint64) *shapes.Victim{shapes.Clear, shapes.Spike, shapes.Reclaim} {
		for _, fill := range shapes.Fills() {
			for seed := uint64(1); seed <= 3; seed++ {
				v := build(2048, fill, seed)
				p, err := preempt.NewSearcher(preempt.Options{}).Victims(v.View(), v.Request, nil)
				require.NoError(t, err)
				ref := preempt.NewSearcher(preempt.Options{})
				preempt.SetNoBounds(ref, true)
				p2, err := ref.Victims(v.View(), v.Request, nil)
				require.NoError(t, err)
				require.Equal(t, p2, p)
			}
		}
	}
}

// TestHopelessCellsKeepThePlan draws cohorts whose rules give a request
// several attempts, running work around its priority in whole nodes and
// gangs that must take whole leaves: a search that leaves every cell out
// for bounds above the priorities the rules let go, and so stops trying
// attempts, answers as the search that tries every cell of every
// attempt, NoPlan included.
func TestHopelessCellsKeepThePlan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		th := int32(rapid.IntRange(0, 3).Draw(t, "threshold"))
		rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority,
			ReclaimWithinCohort: rapid.SampledFrom([]quota.ReclaimWithinCohort{quota.ReclaimLowerPriority, quota.ReclaimLowerPriority, quota.ReclaimAny}).Draw(t, "reclaim"),
			BorrowWithinCohort:  quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
		leaves := rapid.IntRange(1, 3).Draw(t, "leaves")
		e := newEnv(t, 1, leaves, 2, 4, cohort("c", "", int64(rapid.IntRange(0, 8).Draw(t, "nomC"))),
			queue("a", "c", int64(rapid.IntRange(0, 12).Draw(t, "nomA")), rules),
			queue("b", "c", int64(rapid.IntRange(0, 12).Draw(t, "nomB")), lower))
		for n := range 2 * leaves {
			if rapid.IntRange(0, 4).Draw(t, "empty") == 0 {
				continue
			}
			r := e.run(fmt.Sprintf("w%d", n), rapid.SampledFrom([]string{"a", "b"}).Draw(t, "queue"),
				int32(rapid.IntRange(0, 4).Draw(t, "prio")), time.Duration(rapid.IntRange(1, 60).Draw(t, "age"))*time.Minute,
				[]int{n}, []int{rapid.IntRange(1, 4).Draw(t, "gpus")})
			r.MinRuntime = time.Duration(rapid.IntRange(0, 1).Draw(t, "minRuntime")) * 30 * time.Minute
		}
		req := e.req("new", "a", int32(rapid.IntRange(1, 4).Draw(t, "reqPrio")), rapid.IntRange(1, 2).Draw(t, "pods"), 4,
			rapid.SampledFrom([]string{"leaf", ""}).Draw(t, "required"))
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
		ref := preempt.NewSearcher(preempt.Options{})
		preempt.SetNoBounds(ref, true)
		p2, err2 := ref.Victims(e.view(), req, nil)
		require.Equal(t, err2, err)
		require.Equal(t, p2, p)
	})
}

// TestHopelessStopsAttempts: quota fits, but every leaf holds work of the
// preemptor's own queue above its priority, so no leaf can be cleared:
// the first attempt leaves both out and the second is not searched,
// with the NoPlan of the search that tries every leaf in both. (The
// other queue could stop borrowing part way, so the search runs.)
func TestHopelessStopsAttempts(t *testing.T) {
	th := int32(0)
	rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
	e := newEnv(t, 1, 2, 2, 4, cohort("c", "", 0), queue("a", "c", 32, rules), queue("b", "c", 2, lower))
	e.run("b0", "b", 0, time.Hour, []int{0}, []int{2})
	e.run("b1", "b", 0, time.Hour, []int{0}, []int{2})
	for n := 1; n < 4; n++ {
		e.run(fmt.Sprintf("a%d", n), "a", 5, time.Hour, []int{n}, []int{4})
	}
	req := e.req("new", "a", 3, 2, 4, "leaf")
	s := preempt.NewSearcher(preempt.Options{})
	_, err := s.Victims(e.view(), req, nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	require.Equal(t, preempt.WhyTopology, np.Why)
	require.True(t, preempt.Hopeless(s), "both leaves left out")
	_, err2 := unbounded(preempt.Options{}, e.view(), req)
	require.Equal(t, err2, err)
}

// TestHopelessQuotaReadsTheAttemptsVictims: no leaf can be opened, and
// quota would fit if the other queue's work above the threshold went,
// but the attempt that may borrow takes only work at the threshold (just
// started, so no victim) and the other attempt may not borrow: WhyQuota,
// as the search that picks victims says.
func TestHopelessQuotaReadsTheAttemptsVictims(t *testing.T) {
	th := int32(0)
	rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
	e := newEnv(t, 1, 1, 3, 4, cohort("c", "", 16), queue("a", "c", 4, rules), queue("b", "c", 0, lower))
	e.run("a0", "a", 5, time.Hour, []int{0}, []int{4})
	e.run("b1", "b", 0, time.Minute, []int{1}, []int{4}).MinRuntime = 30 * time.Minute
	e.run("b2", "b", 1, time.Hour, []int{2}, []int{4})
	req := e.req("new", "a", 3, 3, 4, "leaf")
	_, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	require.Equal(t, preempt.WhyQuota, np.Why)
	_, err2 := unbounded(preempt.Options{}, e.view(), req)
	require.Equal(t, err2, err)
}

// TestRefusedAddLeavesIndexClean offers the index a bad node entry: the
// Add is refused whole, and the next search answers as on an index that
// never saw it.
func TestRefusedAddLeavesIndexClean(t *testing.T) {
	v := shapes.Clear(2048, shapes.FillMixed, 1)
	want, err := preempt.NewSearcher(preempt.Options{}).Victims(v.View(), v.Request, nil)
	require.NoError(t, err)
	view := v.View()
	bad := v.Running[len(v.Running)-1]
	w := bad.W.Clone()
	bad.W = &w
	bad.W.ID = "bad"
	bad.Nodes = []placement.NodeGPUs{{Node: 1, GPUs: 1}, {Node: 0, GPUs: 0}}
	err = view.Index.Add(bad)
	var ie *preempt.IndexError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, preempt.ErrInvalid)
	require.Equal(t, len(v.Running), view.Index.Len())
	bad.Nodes = []placement.NodeGPUs{{Node: 1, GPUs: 1}} // node 1 is full
	require.ErrorIs(t, view.Index.Add(bad), preempt.ErrInvalid)
	require.ErrorIs(t, view.Index.Add(v.Running[0]), preempt.ErrDuplicate)
	require.ErrorIs(t, view.Index.Remove("bad"), preempt.ErrUnknownWorkload)
	got, err := preempt.NewSearcher(preempt.Options{}).Victims(view, v.Request, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// countingCost is DefaultCost that counts the candidates it prices.
type countingCost struct{ n *int }

func (c countingCost) Cost(r *preempt.Running, now time.Time) float64 {
	*c.n++
	return preempt.DefaultCost{RestartOverhead: 3 * time.Minute}.Cost(r, now)
}

// TestBoundsKeepThePlanWithElasticWork is TestBoundsKeepThePlan with
// elastic workloads among the running ones: the cost bounds count their
// parts, and pruning by them changes no plan.
func TestBoundsKeepThePlanWithElasticWork(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, exclude := instance(t, rapid.Bool().Draw(t, "single"))
		makeElastic(t, e)
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		ref := preempt.NewSearcher(preempt.Options{})
		preempt.SetNoBounds(ref, true)
		p2, err2 := ref.Victims(e.view(), req, exclude)
		require.Equal(t, err2, err)
		require.Equal(t, p2, p)
	})
}

// TestBoundsPruneWhatTheSearchPrices: a search for whole leaves on a
// 16,384-GPU fleet tries the leaves lowest bound first, cheapest cost
// bound first within a bound, and stops once no bound can beat the best
// set: it prices at most half the candidates that trying every leaf
// prices, for the same plan.
func TestBoundsPruneWhatTheSearchPrices(t *testing.T) {
	for _, fill := range shapes.Fills() {
		v := shapes.Clear(16384, fill, 1)
		pruned, every := 0, 0
		p, err := preempt.NewSearcher(preempt.Options{Cost: countingCost{&pruned}}).Victims(v.View(), v.Request, nil)
		require.NoError(t, err)
		ref := preempt.NewSearcher(preempt.Options{Cost: countingCost{&every}})
		preempt.SetNoBounds(ref, true)
		p2, err := ref.Victims(v.View(), v.Request, nil)
		require.NoError(t, err)
		require.Equal(t, p2, p)
		require.LessOrEqual(t, 2*pruned, every, "%v: %d priced, %d trying every leaf", fill, pruned, every)
	}
}

// perGPURate prices a workload, or the part of one the search prices, at
// a rate per GPU by its ID.
type perGPURate map[string]float64

func (c perGPURate) Cost(r *preempt.Running, _ time.Time) float64 {
	g := 0
	for _, x := range r.Nodes {
		g += x.GPUs
	}
	return c[r.W.ID] * float64(g)
}

// Two nodes of 8 GPUs, one queue; the request is one 4-GPU pod on one
// node, so each node is a cell, and each holds an elastic workload of
// priority 0 and old work. The sets that win shrink an elastic workload
// alone at priority 0, so cells tie on rank and their cost bounds prune.

// TestCostBoundCountsTheElasticWorkOfTheCell: node 0's "young" (5
// one-GPU pods, minimum 1) gives up 4 pods for less than node 1's
// "older" does; beside them node 0 holds 3 GPUs of work started 10
// hours ago, node 1 of work started 5 hours ago. The cost bound of a
// cell covers its room with its elastic parts too, so node 0, the
// cheapest, is tried first and wins; a bound from the old work alone
// would put it after node 1 and prune it.
func TestCostBoundCountsTheElasticWorkOfTheCell(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 64, lower))
	elastic(e.run("young", "a", 0, 10*time.Minute, []int{0}, []int{5}), 1)
	e.run("old-0", "a", 0, 10*time.Hour, []int{0}, []int{3})
	elastic(e.run("older", "a", 0, 20*time.Minute, []int{1}, []int{5}), 1)
	e.run("old-1", "a", 0, 5*time.Hour, []int{1}, []int{3})
	req := e.req("new", "a", 1, 1, 4, "node")
	p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"young"}, ids(p))
	require.Len(t, p.Victims[0].Pods, 4)
	p2, err := unbounded(preempt.Options{}, e.view(), req)
	require.NoError(t, err)
	require.Equal(t, p2, p)
}

// TestCostBoundLeavesOutElasticPartsOnTheNextCell: "split" runs a pod on
// node 1 (its rest, minimum 1) and 3 pods on node 0; node 0 also holds
// "w0", 1 GPU at priority -1, and node 1 "f" (4 pods, minimum 1) and
// "w1", 1 GPU at priority -1, beside work that may not be preempted. Node
// 0's room costs 31 (split shrinks by its 3 pods there, and w0 goes),
// node 1's 35 (f shrinks by 3, and w1 goes). The cost bound of node 0
// counts only what frees GPUs on node 0: with split's rest counted too
// (10 more) node 1 would be tried first and node 0 pruned.
func TestCostBoundLeavesOutElasticPartsOnTheNextCell(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 64, lower))
	elastic(e.run("split", "a", 0, time.Hour, []int{1, 0}, []int{1, 3}), 1)
	e.run("w0", "a", -1, time.Hour, []int{0}, []int{1})
	e.run("fix-0", "a", 0, time.Hour, []int{0}, []int{4}).Preemptible = false
	elastic(e.run("f", "a", 0, time.Hour, []int{1}, []int{4}), 1)
	e.run("w1", "a", -1, time.Hour, []int{1}, []int{1})
	e.run("fix-1", "a", 0, time.Hour, []int{1}, []int{2}).Preemptible = false
	cost := perGPURate{"split": 10, "w0": 1, "f": 10, "w1": 5}
	req := e.req("new", "a", 1, 1, 4, "node")
	p, err := preempt.NewSearcher(preempt.Options{Cost: cost}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"split", "w0"}, ids(p))
	require.InDelta(t, 31, p.LostGPUSeconds, 1e-9)
	p2, err := unbounded(preempt.Options{Cost: cost}, e.view(), req)
	require.NoError(t, err)
	require.Equal(t, p2, p)
}

// TestCellOfEqualCostBoundAndFewerVictimsWins: two nodes of 8 GPUs, each
// half held by work that may not be preempted; node 0's other half is
// two 2-GPU workloads, node 1's one 4-GPU workload, all priced 1 a GPU,
// so both nodes' room costs 4, and so do their cost bounds. Node 0 is
// tried first; node 1, whose bound only equals that cost, is tried too,
// and wins with one victim instead of two.
func TestCellOfEqualCostBoundAndFewerVictimsWins(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 64, lower))
	e.run("fixed-0", "a", 0, time.Hour, []int{0}, []int{4}).Preemptible = false
	e.run("small-a", "a", 0, time.Hour, []int{0}, []int{2})
	e.run("small-b", "a", 0, time.Hour, []int{0}, []int{2})
	e.run("fixed-1", "a", 0, time.Hour, []int{1}, []int{4}).Preemptible = false
	e.run("large", "a", 0, time.Hour, []int{1}, []int{4})
	cost := perGPURate{"small-a": 1, "small-b": 1, "large": 1}
	req := e.req("new", "a", 1, 1, 4, "node")
	p, err := preempt.NewSearcher(preempt.Options{Cost: cost}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"large"}, ids(p))
	require.InDelta(t, 4, p.LostGPUSeconds, 1e-9)
}

// unbounded is the plan of a search with opt that prunes no cell by its
// bounds: the reference a bounded search must agree with.
func unbounded(opt preempt.Options, view preempt.View, req preempt.Request) (preempt.Plan, error) {
	ref := preempt.NewSearcher(opt)
	preempt.SetNoBounds(ref, true)
	return ref.Victims(view, req, nil)
}

// TestNegativeCostMetMidWalkStillTriesEveryCell: three nodes, each a cell
// for a 2-GPU pod with 2 GPUs held by work that may not be preempted;
// node 0 also holds L (priority 0) and A, node 1 N and node 2 B (priority
// 1). The first band of the eviction order (L) prices nothing below 0,
// so the walk starts bounded; N's price, -5, is met only when node 1 is
// filled, and B's, -10, the cheapest, is on the last node. A search that
// meets a negative cost holds no bound: it tries node 2 still, and plans
// as the search that prunes nothing.
func TestNegativeCostMetMidWalkStillTriesEveryCell(t *testing.T) {
	e := newEnv(t, 1, 1, 3, 8, queue("a", "", 64, lower))
	for n := range 3 {
		e.run(fmt.Sprintf("fixed-%d", n), "a", 9, time.Hour, []int{n}, []int{2}).Preemptible = false
	}
	e.run("L", "a", 0, time.Minute, []int{0}, []int{1})
	e.run("A", "a", 1, time.Minute, []int{0}, []int{5})
	e.run("N", "a", 1, 3*time.Hour, []int{1}, []int{6})
	e.run("B", "a", 1, 2*time.Minute, []int{2}, []int{6})
	cost := costTable{"L": 1, "A": 3, "N": -5, "B": -10}
	req := e.req("new", "a", 5, 1, 2, "node")
	p, err := preempt.NewSearcher(preempt.Options{Cost: cost}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"B"}, ids(p))
	require.InDelta(t, -10, p.LostGPUSeconds, 1e-9)
	ref, err := unbounded(preempt.Options{Cost: cost}, e.view(), req)
	require.NoError(t, err)
	require.Equal(t, ref, p)
}

// TestCellWhoseBoundRoundsAboveAnEqualCostIsStillTried: two leaves of one
// 8-GPU node, each held by three workloads of 3, 3 and 2 GPUs priced
// 10000.3, 10000.4 and 10000.5, and a gang that needs a whole leaf. Both
// sets cost the same, summed as taken (cheapest first):
// 30001.199999999997. Leaf 0's
// cost bound sums its workloads as indexed (10000.4, 10000.5, 10000.3) to
// 30001.2, leaf 1's (10000.3, 10000.4, 10000.5) to the set's cost, so
// leaf 1 is tried first; leaf 0, whose bound is above that cost by float
// rounding only, is tried too, and wins the tie as the lower domain, as
// in the search that prunes nothing.
func TestCellWhoseBoundRoundsAboveAnEqualCostIsStillTried(t *testing.T) {
	e := newEnv(t, 1, 2, 1, 8, queue("a", "", 64, lower))
	cost := costTable{}
	for _, w := range []struct {
		id   string
		node int
		gpus int
		cost float64
	}{
		{"l0-x", 0, 3, 10000.4}, {"l0-y", 0, 3, 10000.5}, {"l0-z", 0, 2, 10000.3},
		{"l1-x", 1, 3, 10000.3}, {"l1-y", 1, 3, 10000.4}, {"l1-z", 1, 2, 10000.5},
	} {
		e.run(w.id, "a", 0, time.Hour, []int{w.node}, []int{w.gpus})
		cost[w.id] = w.cost
	}
	opt := preempt.Options{Cost: cost}
	req := e.req("new", "a", 10, 2, 4, "leaf")
	p, err := preempt.NewSearcher(opt).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"l0-x", "l0-y", "l0-z"}, ids(p))
	ref, err := unbounded(opt, e.view(), req)
	require.NoError(t, err)
	require.Equal(t, ids(ref), ids(p))
}

// TestIndexBoundsOfWorkStartedAtTheZeroTimeAreLowerBounds: ClearBound
// and CheapestNodesBound of a node holding work started at the zero time
// are at most what DefaultCost charges for it, at times from 1970 to 2200.
func TestIndexBoundsOfWorkStartedAtTheZeroTimeAreLowerBounds(t *testing.T) {
	for _, over := range []time.Duration{0, time.Minute} {
		for _, now := range []time.Time{time.Unix(0, 0), t0, time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)} {
			e := newEnv(t, 1, 1, 1, 8, queue("a", "", 8, quota.Rules{}))
			r := e.run("zero", "a", 0, 0, []int{0}, []int{3})
			r.Started = time.Time{}
			x := e.view().Index
			cost := preempt.DefaultCost{RestartOverhead: over}.Cost(r, now)
			_, clear, ok := x.ClearBound(topology.Root, now, over)
			require.True(t, ok)
			require.LessOrEqual(t, clear, cost, "ClearBound at %v, overhead %v", now, over)
			cheapest, ok := x.CheapestNodesBound(topology.Root, 1, now, over)
			require.True(t, ok)
			require.LessOrEqual(t, cheapest, cost, "CheapestNodesBound at %v, overhead %v", now, over)
			if now.After(time.Unix(0, 0)) {
				require.Positive(t, cheapest, "work started at the zero time is no free room")
			}
		}
	}
}

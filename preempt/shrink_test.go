package preempt_test

import (
	"cmp"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// makeElastic turns some running workloads of e into elastic ones of
// 1-GPU pods with a drawn minimum: the pods above it, last first, are
// what they may give up.
func makeElastic(t *rapid.T, e *env) {
	for i := range e.running {
		r := &e.running[i]
		if rapid.IntRange(0, 5).Draw(t, "elastic") == 0 {
			continue
		}
		var pods []placement.Pod
		for _, x := range r.Nodes {
			for range x.GPUs {
				pods = append(pods, placement.Pod{PodSet: 0, Index: len(pods), Node: x.Node, GPUs: 1})
			}
		}
		minPods := rapid.IntRange(1, len(pods)).Draw(t, "min")
		if minPods == len(pods) {
			continue // at its minimum: it cannot shrink
		}
		r.Shrinkable = slices.Clone(pods)
		slices.Reverse(r.Shrinkable)
		r.Keep = []int{minPods}
	}
}

// fitsFreeing reports whether req fits in quota (in the plan's mode) and
// in topology once the given GPUs are freed, per workload, on clones.
func fitsFreeing(e *env, req preempt.Request, freed map[string][]placement.NodeGPUs, allowBorrow bool) bool {
	f, tree := e.f.Clone(), e.tree.Clone()
	for _, r := range e.running {
		nodes, ok := freed[r.W.ID]
		if !ok {
			continue
		}
		for _, x := range nodes {
			if err := f.Release(x.Node, x.GPUs); err != nil {
				panic(err)
			}
		}
		if err := tree.RemoveUsage(r.Queue, r.Flavor, int64(gpusOfTest(nodes))); err != nil {
			panic(err)
		}
	}
	v := tree.Fits(req.Queue, req.Flavor, int64(req.W.GPUs()))
	if !v.Fits() || !allowBorrow && v.Borrowing() {
		return false
	}
	_, err := placement.Place(f, req.W, placement.Options{})
	return err == nil
}

func podGPUs(pods []placement.Pod) []placement.NodeGPUs {
	return placement.Assignment{Pods: pods}.NodeGPUs()
}

// rankOf orders victims as the search does: priority first, then a
// shrink below a whole eviction.
func rankOf(prio int32, whole bool) int64 {
	r := int64(prio) * 2
	if whole {
		r++
	}
	return r
}

// drainingRank is the rank of work already draining, which stops
// nothing new: below every priority.
const drainingRank = int64(math.MinInt32) * 2

// victimRank is r's rank as a victim, whole or shrunk.
func victimRank(r *preempt.Running, whole bool) int64 {
	if r.Draining {
		return drainingRank
	}
	return rankOf(r.W.Priority, whole)
}

// testCost is the search's default cost model.
var testCost = preempt.DefaultCost{RestartOverhead: 3 * time.Minute}

// partCost is testCost's price of the GPUs nodes of r alone.
func partCost(r *preempt.Running, nodes []placement.NodeGPUs, now time.Time) float64 {
	part := *r
	part.Nodes = nodes
	return testCost.Cost(&part, now)
}

// planScore recomputes, apart from the search, a plan's highest victim
// rank and its cost: a whole victim's lost work, a shrink's the lost
// work of the pods it gives up alone.
func planScore(t require.TestingT, p preempt.Plan, byID map[string]*preempt.Running, now time.Time) (int64, float64) {
	rk, cost := int64(math.MinInt64), 0.0
	for _, v := range p.Victims {
		r := byID[v.ID]
		c := testCost.Cost(r, now)
		if v.Shrink() {
			c = partCost(r, podGPUs(v.Pods), now)
		}
		require.InDelta(t, c, v.Cost, 1e-6*(1+c), "%s: priced by what it loses", v.ID)
		cost += c
		rk = max(rk, victimRank(r, !v.Shrink()))
	}
	require.InDelta(t, cost, p.LostGPUSeconds, 1e-6*(1+cost), "the plan's cost is its victims'")
	return rk, cost
}

// surplusOf is the pods r gives up first down to its minimum (its
// shrinkable pods in order, all but Keep of each pod set), nil when it
// cannot shrink.
func surplusOf(r *preempt.Running) []placement.Pod {
	if r.Draining || len(r.Shrinkable) == 0 {
		return nil
	}
	give := make([]int, len(r.Keep))
	for _, p := range r.Shrinkable {
		give[p.PodSet]++
	}
	for i, k := range r.Keep {
		give[i] -= k
	}
	var out []placement.Pod
	for _, p := range r.Shrinkable {
		if give[p.PodSet] > 0 {
			give[p.PodSet]--
			out = append(out, p)
		}
	}
	return out
}

// With elastic candidates, the search's choice prefers shrinking to
// evicting at one priority and never gives up Kueue's priority order: a
// plan exists with shrinks whenever one exists without; outside fair
// sharing (where queues go by share), the highest priority, and the
// highest rank (a shrink below a whole eviction), of the victims it asks
// to stop (not draining already: that stops nothing new, and ranks below
// every priority) are then no higher than the plan's without them; every victim is
// under the rules; the plan fits, no victim could go and no pod a shrink
// gives up could be kept; a victim evicted whole could not have given up
// its surplus alone instead; and every victim is priced by what it loses
// (a shrink by its pods alone).
func TestShrinkProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, exclude := instance(t, rapid.Bool().Draw(t, "single"))
		whole, errWhole := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		byID := map[string]*preempt.Running{}
		for i := range e.running {
			byID[e.running[i].W.ID] = &e.running[i]
		}
		// The highest priority and rank of the victims a plan asks to
		// stop.
		stopping := func(p preempt.Plan) (int32, int64) {
			prio, rk := int32(math.MinInt32), int64(math.MinInt64)
			for _, v := range p.Victims {
				if !byID[v.ID].Draining {
					prio, rk = max(prio, v.Priority), max(rk, rankOf(v.Priority, !v.Shrink()))
				}
			}
			return prio, rk
		}
		var wholeRank int64
		var wholePrio int32
		if errWhole == nil {
			planScore(t, whole, byID, req.Now)
			wholePrio, wholeRank = stopping(whole)
		}
		makeElastic(t, e)
		beforeF := e.f.String()
		var beforeT bytesOf
		beforeT.read(e.tree)
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		require.Equal(t, beforeF, e.f.String())
		var afterT bytesOf
		afterT.read(e.tree)
		require.Equal(t, beforeT, afterT)
		p2, err2 := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		require.Equal(t, err == nil, err2 == nil)
		require.Equal(t, p, p2, "deterministic")
		// Not the reverse: elastic work only adds options, and changes
		// the order victims are met in (a surplus comes before whole
		// evictions of its priority). Where reclaiming from a queue ends
		// once it stops borrowing, shrinking a workload first may leave
		// room to take it whole after all, where evicting a cheaper
		// workload first ends the borrowing and with it the plan.
		if errWhole == nil {
			require.NoError(t, err, "a plan exists without shrinks: %v", summarize(whole))
		}
		if err != nil {
			return
		}
		planScore(t, p, byID, req.Now)
		prio, rk := stopping(p)
		// Under fair sharing queues go by share, not priority: a shrink
		// that brings a queue back within quota leaves the rest to the
		// next queue's work, whatever its priority.
		if !req.FairSharing && errWhole == nil {
			require.LessOrEqual(t, prio, wholePrio, "shrinks never raise the highest priority stopped: %+v, whole %+v", summarize(p), summarize(whole))
			require.LessOrEqual(t, rk, wholeRank, "shrinks never raise the highest rank stopped: %+v, whole %+v", summarize(p), summarize(whole))
		}
		freed := map[string][]placement.NodeGPUs{}
		for id := range exclude {
			freed[id] = byID[id].Nodes
		}
		rules := e.tree.Rules(req.Queue)
		for _, v := range p.Victims {
			r := byID[v.ID]
			require.NotNil(t, r)
			require.False(t, exclude[v.ID], "excluded victim %s", v.ID)
			_, seen := freed[v.ID]
			require.False(t, seen, "repeated victim %s", v.ID)
			require.True(t, r.Draining || r.Preemptible && !req.Now.Before(r.Started.Add(r.MinRuntime)), "drain contract %s", v.ID)
			if r.Queue == req.Queue {
				require.Equal(t, preempt.InQueue, v.Reason)
				require.NotEqual(t, quota.WithinQueueNever, rules.WithinQueue)
				require.LessOrEqual(t, r.W.Priority, req.W.Priority)
			} else {
				require.NotEqual(t, quota.ReclaimNever, rules.ReclaimWithinCohort)
			}
			if v.Shrink() {
				require.NotEmpty(t, r.Shrinkable, "%s shrinks", v.ID)
				require.False(t, r.Draining, "%s shrinks while draining", v.ID)
				for _, pod := range v.Pods {
					require.Contains(t, r.Shrinkable, pod, "%s gives up a pod it may", v.ID)
				}
				require.LessOrEqual(t, len(v.Pods), len(r.Shrinkable)-r.Keep[0], "%s stays at its minimum at least", v.ID)
				require.Equal(t, gpusOfTest(podGPUs(v.Pods)), v.GPUs)
				require.Equal(t, podGPUs(v.Pods), v.Nodes)
				freed[v.ID] = podGPUs(v.Pods)
			} else {
				require.Equal(t, gpusOfTest(r.Nodes), v.GPUs, "whole gang")
				freed[v.ID] = r.Nodes
			}
		}
		require.True(t, fitsFreeing(e, req, freed, p.Borrowing), "fits without the victims' pods")
		for _, v := range p.Victims {
			r := byID[v.ID]
			all := freed[v.ID]
			delete(freed, v.ID)
			require.False(t, fitsFreeing(e, req, freed, p.Borrowing), "1-minimal: %s is not needed", v.ID)
			if v.Shrink() {
				for i := range v.Pods {
					freed[v.ID] = podGPUs(slices.Delete(slices.Clone(v.Pods), i, i+1))
					require.False(t, fitsFreeing(e, req, freed, p.Borrowing), "pod-minimal: %s could keep %+v", v.ID, v.Pods[i])
				}
			} else if sp := surplusOf(r); len(sp) > 0 {
				freed[v.ID] = podGPUs(sp)
				require.False(t, fitsFreeing(e, req, freed, p.Borrowing), "%s evicted whole, could have given up its surplus", v.ID)
			}
			freed[v.ID] = all
		}
	})
}

// TestShrinkAgainstBruteForce compares the search, on one queue where
// every rule is static, with every choice for each allowed candidate:
// stay, give up any of its shrinkable pods down to its minimum, or go
// whole. Shrinks are priced by the lost work of the pods given up, and a
// choice ranks by its highest victim priority, a shrink below a whole
// eviction at one priority, then by cost. Then:
//   - a plan exists iff some choice fits;
//   - the plan's cost, recomputed from its victims, is what it reports;
//   - its rank is the best any choice reaches (the search prefers a
//     shrink to an eviction of the same priority, and lower priority
//     first), when no candidate is already draining (the eviction order
//     takes those first, whatever their priority);
//   - its rank and cost are no worse than Kueue's walk over the same
//     order of parts (each elastic workload's surplus, ranked as a
//     shrink, then its rest, ranked whole), filled back, the walk's
//     surpluses priced whole as the search compares sets.
func TestShrinkAgainstBruteForce(t *testing.T) {
	var compared, optimal int
	defer func() {
		t.Logf("%d plans compared with every choice, %d with an elastic victim", compared, optimal)
	}()
	rapid.Check(t, func(t *rapid.T) {
		e, req, _ := instance(t, true)
		makeElastic(t, e)
		byID := map[string]*preempt.Running{}
		var allowed []*preempt.Running
		draining := false
		for i := range e.running {
			r := &e.running[i]
			byID[r.W.ID] = r
			if (r.Draining || r.Preemptible && !req.Now.Before(r.Started.Add(r.MinRuntime))) && r.W.Priority < req.W.Priority {
				allowed = append(allowed, r)
				draining = draining || r.Draining
			}
		}
		// Each allowed candidate: stay, give up a subset of its surplus
		// size or less of its shrinkable pods, or go whole.
		type option struct {
			nodes []placement.NodeGPUs // nil: stays
			rank  int64
			cost  float64
		}
		options := make([][]option, len(allowed))
		size := 1
		for i, r := range allowed {
			opts := []option{{}, {nodes: r.Nodes, rank: victimRank(r, true), cost: testCost.Cost(r, req.Now)}}
			if sp := surplusOf(r); len(sp) > 0 {
				most := len(sp)
				for mask := 1; mask < 1<<len(r.Shrinkable); mask++ {
					var pods []placement.Pod
					for j, pod := range r.Shrinkable {
						if mask&(1<<j) != 0 {
							pods = append(pods, pod)
						}
					}
					if len(pods) > most {
						continue
					}
					ng := podGPUs(pods)
					opts = append(opts, option{nodes: ng, rank: rankOf(r.W.Priority, false), cost: partCost(r, ng, req.Now)})
				}
			}
			options[i] = opts
			size *= len(opts)
		}
		if size > 1<<14 {
			t.Skip("too many choices to enumerate")
		}
		exists := false
		bestRank, bestCost := int64(math.MaxInt64), math.Inf(1)
		choice := make([]int, len(allowed))
		var walk func(i int)
		walk = func(i int) {
			if i == len(allowed) {
				freed := map[string][]placement.NodeGPUs{}
				rk, cost := int64(math.MinInt64), 0.0
				for j, r := range allowed {
					if o := options[j][choice[j]]; o.nodes != nil {
						freed[r.W.ID] = o.nodes
						rk = max(rk, o.rank)
						cost += o.cost
					}
				}
				if rk > bestRank || rk == bestRank && cost >= bestCost {
					return
				}
				if fitsFreeing(e, req, freed, true) {
					exists = true
					bestRank, bestCost = rk, cost
				}
				return
			}
			for k := range options[i] {
				choice[i] = k
				walk(i + 1)
			}
		}
		walk(0)
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
		require.Equal(t, exists, err == nil, "brute force %v, ours %v", exists, err)
		if err != nil {
			return
		}
		compared++
		rk, cost := planScore(t, p, byID, req.Now)
		if !draining {
			require.Equal(t, bestRank, rk, "the best rank any choice reaches (cost: best %.0f, ours %.0f)", bestCost, cost)
		}
		if slices.ContainsFunc(p.Victims, func(v preempt.Victim) bool { return len(byID[v.ID].Shrinkable) > 0 }) {
			optimal++
		}
		// Sets of one rank are compared with each surplus priced whole
		// (preempt's doc): the plan costs no more than the walk's set so
		// priced, though the walk's surplus may be trimmed further.
		gRank, gCost := rankedBaseline(e, req, allowed)
		require.True(t, rk < gRank || rk == gRank && cost <= gCost+1e-6*(1+gCost),
			"ours (%d, %.0f) worse than the walk (%d, %.0f)", rk, cost, gRank, gCost)
	})
}

// rankedBaseline is Kueue's walk over the search's order of parts: every
// allowed candidate's parts (an elastic one's surplus, ranked as a shrink,
// and its rest; any other whole) in the eviction order (draining first,
// lower priority, a shrink before a whole eviction, lower cost, ID),
// removed until the request fits, filled back newest first (a surplus
// only once its rest is back), each surplus left alone keeping back,
// last first, the pods the request does not need. It returns the set's
// highest rank and cost.
func rankedBaseline(e *env, req preempt.Request, allowed []*preempt.Running) (int64, float64) {
	type unit struct {
		r       *preempt.Running
		surplus bool
		rest    bool // the rest of an elastic workload
		nodes   []placement.NodeGPUs
		rank    int64
		cost    float64
	}
	var units []unit
	for _, r := range allowed {
		sp := surplusOf(r)
		if len(sp) == 0 {
			units = append(units, unit{r: r, nodes: r.Nodes, rank: victimRank(r, true), cost: testCost.Cost(r, req.Now)})
			continue
		}
		s := podGPUs(sp)
		rest := slices.Clone(r.Nodes)
		for _, x := range s {
			for i := range rest {
				if rest[i].Node == x.Node {
					rest[i].GPUs -= x.GPUs
				}
			}
		}
		rest = slices.DeleteFunc(rest, func(x placement.NodeGPUs) bool { return x.GPUs == 0 })
		units = append(units, unit{r: r, surplus: true, nodes: s, rank: rankOf(r.W.Priority, false), cost: partCost(r, s, req.Now)},
			unit{r: r, rest: true, nodes: rest, rank: rankOf(r.W.Priority, true), cost: partCost(r, rest, req.Now)})
	}
	slices.SortStableFunc(units, func(a, b unit) int {
		if a.r.Draining != b.r.Draining {
			if a.r.Draining {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.r.W.Priority, b.r.W.Priority), cmp.Compare(a.rank, b.rank),
			cmp.Compare(a.cost, b.cost), cmp.Compare(a.r.W.ID, b.r.W.ID))
	})
	taken := make([]bool, len(units))
	freed := func() map[string][]placement.NodeGPUs {
		out := map[string][]placement.NodeGPUs{}
		for i, u := range units {
			if taken[i] {
				out[u.r.W.ID] = append(out[u.r.W.ID], u.nodes...)
			}
		}
		return out
	}
	var order []int
	for i := range units {
		if fitsFreeing(e, req, freed(), true) {
			break
		}
		taken[i] = true
		order = append(order, i)
	}
	restTaken := func(r *preempt.Running) bool {
		for i, u := range units {
			if taken[i] && u.rest && u.r == r {
				return true
			}
		}
		return false
	}
	for _, i := range slices.Backward(order) {
		if units[i].surplus && restTaken(units[i].r) {
			continue
		}
		taken[i] = false
		if !fitsFreeing(e, req, freed(), true) {
			taken[i] = true
		}
	}
	rk, cost := int64(math.MinInt64), 0.0
	for i, u := range units {
		if !taken[i] {
			continue
		}
		rk = max(rk, u.rank)
		if !u.surplus || restTaken(u.r) {
			cost += u.cost
			continue
		}
		cost += u.cost // a surplus priced whole, as sets are compared
	}
	return rk, cost
}

func allWhole(rs []*preempt.Running) map[string][]placement.NodeGPUs {
	out := map[string][]placement.NodeGPUs{}
	for _, r := range rs {
		out[r.W.ID] = r.Nodes
	}
	return out
}

// An elastic victim of 4 one-GPU pods (minimum 1) on a full node gives
// up the one pod a 1-GPU request needs, priced by that pod alone.
func TestShrinkGivesUpOnlyWhatIsNeeded(t *testing.T) {
	e := newEnv(t, 1, 1, 1, 4, queue("a", "", 4, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}))
	r := e.run("batch", "a", 0, time.Hour, []int{0}, []int{4})
	for i := range 4 {
		r.Shrinkable = append(r.Shrinkable, placement.Pod{PodSet: 0, Index: 3 - i, Node: 0, GPUs: 1})
	}
	r.Keep = []int{1}
	whole := *r
	whole.Shrinkable, whole.Keep = nil, nil
	req := e.req("new", "a", 5, 1, 1, "")
	p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.Len(t, p.Victims, 1)
	v := p.Victims[0]
	require.True(t, v.Shrink())
	require.Equal(t, []placement.Pod{{PodSet: 0, Index: 3, Node: 0, GPUs: 1}}, v.Pods)
	require.Equal(t, 1, v.GPUs)
	full := preempt.DefaultCost{RestartOverhead: 3 * time.Minute}.Cost(&whole, t0)
	require.InDelta(t, full/4, v.Cost, 1e-6, "the lost work of one pod of four")
	require.InDelta(t, v.Cost, p.LostGPUSeconds, 1e-6)

	req = e.req("new", "a", 5, 1, 4, "")
	p, err = preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.Len(t, p.Victims, 1)
	require.False(t, p.Victims[0].Shrink(), "4 GPUs need it whole: its minimum pod sits on them")
}

func TestIndexRefusesShrinkablePodsOffItsNodes(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 4, queue("a", "", 8, quota.Rules{}))
	r := e.run("w", "a", 0, time.Hour, []int{0}, []int{4})
	x := preempt.NewIndex(e.f, e.tree)
	for name, pods := range map[string][]placement.Pod{
		"off its nodes": {{Node: 1, GPUs: 1}},
		"every GPU":     {{Node: 0, GPUs: 2}, {Node: 0, GPUs: 2}},
		"other pod set": {{PodSet: 1, Node: 0, GPUs: 1}},
		"more GPUs":     {{Node: 0, GPUs: 5}},
	} {
		bad := *r
		bad.Shrinkable, bad.Keep = pods, []int{0}
		require.ErrorIs(t, x.Add(bad), preempt.ErrInvalid, name)
	}
	bad := *r
	bad.Shrinkable, bad.Keep = []placement.Pod{{Node: 0, GPUs: 4}}, []int{0}
	require.ErrorIs(t, x.Add(bad), preempt.ErrInvalid, "keeps nothing")
	ok := *r
	ok.Shrinkable, ok.Keep = []placement.Pod{{Node: 0, GPUs: 2}, {Node: 0, GPUs: 2}}, []int{1}
	require.NoError(t, x.Add(ok))
}

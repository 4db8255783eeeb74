package preempt_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/draw"
	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
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
	p, err := s.Victims(e.view(), r, exclude)
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

func TestBorrowWithinCohortThreshold(t *testing.T) {
	th := int32(3)
	rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
	for _, tc := range []struct {
		name string
		prio int32
		want []string
	}{
		{"below threshold", 1, []string{"b-lo"}},
		{"above threshold", 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 3, 8, cohort("c", "", 8), queue("a", "c", 8, rules), queue("b", "c", 8, lower))
			e.run("a1", "a", 10, time.Hour, []int{0}, []int{8})
			e.run("b-lo", "b", tc.prio, time.Hour, []int{1}, []int{8})
			e.run("b-hi", "b", 5, time.Hour, []int{2}, []int{8})
			p, err := victims(t, e, e.req("new", "a", 10, 1, 8, ""), nil)
			if tc.want == nil {
				require.ErrorIs(t, err, preempt.ErrNoPlan)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, ids(p))
			assert.Equal(t, preempt.ReclaimWhileBorrowing, p.Victims[0].Reason)
			assert.True(t, p.Borrowing)
		})
	}
}

func TestHierarchicalAdvantage(t *testing.T) {
	// a is idle and within its nominal quota: it has hierarchical
	// advantage over b, which borrows from another branch, even though b's
	// priority is above a's borrowWithinCohort threshold.
	th := int32(10)
	rules := reclaimLP
	rules.BorrowWithinCohort = quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}
	e := newEnv(t, 1, 1, 1, 8, cohort("root", "", 0), cohort("left", "root", 0), cohort("right", "root", 0),
		queue("a", "left", 8, rules), queue("b", "right", 0, lower))
	e.run("b1", "b", 50, time.Hour, []int{0}, []int{8})
	p, err := victims(t, e, e.req("new", "a", 100, 1, 8, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"b1"}, ids(p))
	assert.Equal(t, preempt.Reclaim, p.Victims[0].Reason)
	assert.False(t, p.Borrowing)
}

func TestFairSharingWeights(t *testing.T) {
	w4 := 4.0
	x := queue("x", "c", 0, lower)
	x.Weight = &w4
	e := newEnv(t, 1, 1, 4, 8, cohort("c", "", 0), queue("lender", "c", 32, lower),
		queue("a", "c", 0, reclaimLP), queue("b", "c", 0, lower), x)
	e.run("x1", "x", 0, time.Hour, []int{0}, []int{8})
	e.run("x2", "x", 0, time.Hour, []int{1}, []int{8})
	e.run("b1", "b", 0, time.Hour, []int{2}, []int{8})
	e.run("b2", "b", 0, 2*time.Hour, []int{3}, []int{8})
	r := e.req("new", "a", 10, 1, 8, "")
	r.FairSharing = true
	p, err := victims(t, e, r, nil)
	require.NoError(t, err)
	// b's weighted share (16/32) is above x's (16/32/4): take from b.
	require.Len(t, p.Victims, 1)
	assert.Equal(t, "b1", p.Victims[0].ID)
	assert.Equal(t, preempt.FairSharing, p.Victims[0].Reason)
}

func TestClearOneSpineOfCheapBatch(t *testing.T) {
	v := shapes.Clear(2048, shapes.FillFull, 1)
	// Spine 2 holds the cheapest work: the gang must clear it, not
	// scatter victims over spines.
	for i := range v.Running {
		r := &v.Running[i]
		if v.Fleet.DomainOf(r.Nodes[0].Node, 1) == spine(v, 2) {
			w := r.W.Clone()
			w.Priority %= 10
			r.W = &w
		} else if r.W.Priority < 50 {
			w := r.W.Clone()
			w.Priority += 50
			r.W = &w
		}
	}
	s := preempt.NewSearcher(preempt.Options{})
	p, err := s.Victims(v.View(), v.Request, nil)
	require.NoError(t, err)
	require.Len(t, p.Victims, 64)
	gpus := 0
	for _, x := range p.Victims {
		assert.Equal(t, spine(v, 2), v.Fleet.DomainOf(x.Nodes[0].Node, 1))
		assert.Less(t, x.Priority, int32(10))
		gpus += x.GPUs
	}
	assert.Equal(t, 512, gpus)
	assert.Equal(t, spine(v, 2), v.Fleet.DomainOf(p.Target.Pods[0].Node, 1))
}

func spine(v *shapes.Victim, i int) topology.DomainID {
	lo, _ := v.Fleet.DomainsAt(1)
	return lo + topology.DomainID(i)
}

func TestExcludeGivesDisjointJointlyFittingPlans(t *testing.T) {
	e := newEnv(t, 1, 2, 2, 8, queue("a", "", 32, lower))
	for n := range 4 {
		e.run(fmt.Sprintf("w%d", n), "a", int32(n), time.Hour, []int{n}, []int{8})
	}
	s := preempt.NewSearcher(preempt.Options{})
	r1 := e.req("one", "a", 10, 2, 8, "leaf")
	p1, err := s.Victims(e.view(), r1, nil)
	require.NoError(t, err)
	// The first plan is accepted: its victims' GPUs are all promised.
	d := claimAll{}
	for _, v := range p1.Victims {
		d[v.ID] = true
	}
	require.NoError(t, e.tree.AddUsage(e.q("a"), e.fl, 16))
	r2 := e.req("two", "a", 10, 2, 8, "leaf")
	r2.Claims = d
	exclude := map[string]bool{}
	for _, v := range p1.Victims {
		exclude[v.ID] = true
	}
	p2, err := s.Victims(e.view(), r2, exclude)
	require.NoError(t, err)
	for _, v := range p2.Victims {
		assert.False(t, exclude[v.ID])
	}
	assert.Len(t, p2.Victims, 2)
	assert.NotEqual(t, e.f.DomainOf(p1.Target.Pods[0].Node, 2), e.f.DomainOf(p2.Target.Pods[0].Node, 2))
}

// claimAll is accepted drains whose victims' GPUs are all promised.
type claimAll map[string]bool

func (c claimAll) Tracked(id string) bool { return c[id] }

func (c claimAll) Unclaimed(id string, _ topology.NodeID, gpus int) int {
	if c[id] {
		return 0
	}
	return gpus
}

// perGPU prices every GPU alike, so that many candidates tie on cost and
// the ID tie-break decides their order.
type perGPU struct{}

func (perGPU) Cost(r *preempt.Running, _ time.Time) float64 {
	g := 0
	for _, x := range r.Nodes {
		g += x.GPUs
	}
	return float64(g)
}

// TestIndexOrderKeepsThePlan indexes the same running workloads as
// built, sorted by ID and reversed: the candidate order, and so the plan,
// does not depend on the order of Add, with distinct costs and with
// costs that tie.
func TestIndexOrderKeepsThePlan(t *testing.T) {
	for _, build := range []func(int, shapes.Fill, uint64) *shapes.Victim{shapes.Clear, shapes.Spike, shapes.Reclaim} {
		for _, fill := range shapes.Fills() {
			for _, opt := range []preempt.Options{{}, {Cost: perGPU{}}} {
				v := build(2048, fill, 1)
				want, err := preempt.NewSearcher(opt).Victims(v.View(), v.Request, nil)
				require.NoError(t, err)
				sorted := slices.Clone(v.Running)
				slices.SortFunc(sorted, func(a, b preempt.Running) int { return strings.Compare(a.W.ID, b.W.ID) })
				reversed := slices.Clone(sorted)
				slices.Reverse(reversed)
				s := preempt.NewSearcher(opt)
				for _, running := range [][]preempt.Running{sorted, reversed, v.Running} {
					view := v.View()
					view.Index = preempt.NewIndex(v.Fleet, v.Tree)
					for _, r := range running {
						require.NoError(t, view.Index.Add(r))
					}
					got, err := s.Victims(view, v.Request, nil)
					require.NoError(t, err)
					require.Equal(t, want, got)
				}
			}
		}
	}
}

// TestQuotaVictimInAnotherPoolLeavesTheRoomOfThePool: the request may
// use pool p1 only (nodes 0 and 1), its queue is at its quota, and the
// cheapest work of the queue runs on node 2, of pool p2. Freeing node 2
// for quota makes no room in p1: a node of p1 is cleared, and its work
// is the only victim (the quota victim in p2 is no longer needed).
func TestQuotaVictimInAnotherPoolLeavesTheRoomOfThePool(t *testing.T) {
	spec := topology.Spec{Levels: []string{"leaf", "node"}}
	for i, pool := range []string{"p1", "p1", "p2"} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), Path: []string{"leaf"},
			GPUs: 4, Flavor: "H100", Pool: pool})
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{queue("a", "", 12, lower)}})
	require.NoError(t, err)
	e := &env{t: t, f: f, tree: tree}
	e.run("on-p2", "a", 0, time.Minute, []int{2}, []int{4})
	e.run("on-n0", "a", 0, time.Hour, []int{0}, []int{4})
	e.run("on-n1", "a", 0, 2*time.Hour, []int{1}, []int{4})
	for _, required := range []string{"", "node"} {
		t.Run("required "+required, func(t *testing.T) {
			r := e.req("new", "a", 5, 1, 4, required)
			r.W.Pools = []string{"p1"}
			p, err := victims(t, e, r, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"on-n0"}, ids(p))
			assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 4}}, p.Target.NodeGPUs())
		})
	}
}

// TestTwoPoolsEachNodeFreedInItsOwnPool: a request that may use either
// of two pools of one flavor is placed within one pool, and the search
// keeps the room it frees per node and pool. Four 4-GPU nodes, pools
// alternating (p1, p2, p1, p2), each full with one workload; the work on
// node 2, of pool p1, costs least and is the victim, whether the
// request needs one node or takes any.
func TestTwoPoolsEachNodeFreedInItsOwnPool(t *testing.T) {
	spec := topology.Spec{Levels: []string{"leaf", "node"}}
	for i, pool := range []string{"p1", "p2", "p1", "p2"} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), Path: []string{fmt.Sprintf("leaf-%d", i/2)},
			GPUs: 4, Flavor: "H100", Pool: pool})
	}
	for _, required := range []string{"", "node", "leaf"} {
		t.Run("required "+required, func(t *testing.T) {
			f, err := topology.New(spec)
			require.NoError(t, err)
			tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{queue("a", "", 32, lower)}})
			require.NoError(t, err)
			e := &env{t: t, f: f, tree: tree}
			for n, age := range []time.Duration{4 * time.Hour, 3 * time.Hour, time.Minute, 2 * time.Hour} {
				e.run(fmt.Sprintf("on-%d", n), "a", 0, age, []int{n}, []int{4})
			}
			p, err := victims(t, e, e.req("new", "a", 5, 1, 4, required), nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"on-2"}, ids(p))
			assert.Equal(t, []placement.NodeGPUs{{Node: 2, GPUs: 4}}, p.Target.NodeGPUs())
		})
	}
}

// TestSearcherAnswersAlikeAcrossItsEpochWrap: a Searcher marks what a call
// found with the call's epoch, a counter that wraps after 2^32 calls. The
// first call finds b's work a candidate; the call at the wrap, to which
// the epoch brings the same value again, is asked about work that may not
// be preempted, and answers as a fresh Searcher does: no candidates.
func TestSearcherAnswersAlikeAcrossItsEpochWrap(t *testing.T) {
	envWith := func(preemptible bool) *env {
		e := newEnv(t, 1, 1, 1, 8, cohort("c", "", 0), queue("a", "c", 8, reclaimAny), queue("b", "c", 0, lower))
		e.run("b-1", "b", 1, time.Hour, []int{0}, []int{8}).Preemptible = preemptible
		return e
	}
	s := preempt.NewSearcher(preempt.Options{})
	first := envWith(true)
	p, err := s.Victims(first.view(), first.req("new", "a", 5, 1, 8, ""), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"b-1"}, ids(p))

	preempt.SetEpoch(s, math.MaxUint32)
	e := envWith(false)
	req := e.req("new", "a", 5, 1, 8, "")
	_, err = s.Victims(e.view(), req, nil)
	_, want := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, want, &np)
	require.Equal(t, preempt.WhyNoCandidates, np.Why)
	require.Equal(t, want, err)
}

// TestSearcherPlansAlikeAcrossItsCellWalkWrap: the cell and node walks
// mark what they counted with a counter of their own, which wraps after
// 2^32 walks. Instance 17705 as the recorded corpus draws it is searched
// once, then again with the next walk at the wrap: the walk counts every
// candidate of its cell, not those the first search marked with the same
// value, and the plan is the same.
func TestSearcherPlansAlikeAcrossItsCellWalkWrap(t *testing.T) {
	d := draw.Seeded(17705, 20261203)
	single := d.IntRange(0, 3, "") == 0
	fanout := []int{d.IntRange(1, 2, ""), d.IntRange(1, 3, ""), d.IntRange(1, 3, "")}
	gpus := draw.Pick(d, []int{4, 8}, "")
	e, req, exclude := drawInstance(t, d, single, fanout, gpus)
	s := preempt.NewSearcher(preempt.Options{})
	p, err := s.Victims(e.view(), req, exclude)
	require.NoError(t, err)
	require.Equal(t, []string{"w4", "w7", "w2"}, ids(p), "the instance drawn")
	preempt.SetCellEpoch(s, math.MaxUint32)
	again, err := s.Victims(e.view(), req, exclude)
	require.NoError(t, err)
	require.Equal(t, p, again)
}

// TestPodSetsOfNoOrTooManyGPUsAreRefusedWhereverListed: a pod set of no
// whole GPU, or of more GPUs than any node has, makes the request
// invalid whichever pod set it is, so one workload gets one answer in
// whatever order its pod sets are listed. Without the check, the later
// pod sets would be searched for, to a refusal for topology or quota.
func TestPodSetsOfNoOrTooManyGPUsAreRefusedWhereverListed(t *testing.T) {
	worker := gang.PodSet{Name: "worker", Count: 1, GPUsPerPod: 8}
	launcher := gang.PodSet{Name: "launcher", Count: 1, GPUsPerPod: 0}
	big := gang.PodSet{Name: "big", Count: 1, GPUsPerPod: 9}
	for _, tc := range []struct {
		name   string
		sets   []gang.PodSet
		detail string
	}{
		{"no GPU first", []gang.PodSet{launcher, worker}, "pod set launcher asks for no whole GPU; the victim search frees whole GPUs only"},
		{"no GPU last", []gang.PodSet{worker, launcher}, "pod set launcher asks for no whole GPU; the victim search frees whole GPUs only"},
		{"too many first", []gang.PodSet{big, worker}, "pod set big: 9 GPUs a pod, more than any node has (8)"},
		{"too many last", []gang.PodSet{worker, big}, "pod set big: 9 GPUs a pod, more than any node has (8)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 8, queue("a", "", 32, lower))
			e.run("lo", "a", 0, time.Hour, []int{0}, []int{8})
			e.run("lo2", "a", 0, time.Hour, []int{1}, []int{8})
			r := e.req("new", "a", 10, 1, 8, "")
			r.W.PodSets = tc.sets
			_, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), r, nil)
			var np *preempt.NoPlan
			require.ErrorAs(t, err, &np)
			assert.Equal(t, preempt.WhyInvalid, np.Why)
			assert.Equal(t, tc.detail, np.Detail)
		})
	}
}

// TestWorkStartedAtTheZeroTimeIsTheCostliestVictim: a workload whose
// Started was left zero has lost all the work DefaultCost can count (its
// unsaved time saturates), so it is the costliest victim, not one priced
// below 0 by a restart overhead added past the saturation. Of three
// 1-GPU workloads, the one started an hour ago goes.
func TestWorkStartedAtTheZeroTimeIsTheCostliestVictim(t *testing.T) {
	e := newEnv(t, 1, 1, 1, 8, queue("a", "", 3, lower))
	e.run("hour", "a", 0, time.Hour, []int{0}, []int{1})
	e.run("two-hours", "a", 0, 2*time.Hour, []int{0}, []int{1})
	e.run("zero", "a", 0, 0, []int{0}, []int{1}).Started = time.Time{}
	cost := preempt.DefaultCost{RestartOverhead: time.Minute}
	for _, r := range e.running {
		assert.Positive(t, cost.Cost(&r, t0), r.W.ID)
	}
	p, err := preempt.NewSearcher(preempt.Options{RestartOverhead: time.Minute}).Victims(e.view(), e.req("new", "a", 10, 1, 1, ""), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"hour"}, ids(p))
}

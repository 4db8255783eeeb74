package preempt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// unitEnv is a fleet of 1-GPU nodes under the given quota tree, so that
// only quota binds; runN places each workload on fresh nodes.
type unitEnv struct {
	*env
	next int
}

func newUnitEnv(t *testing.T, qnodes ...quota.NodeSpec) *unitEnv {
	return &unitEnv{env: newEnv(t, 1, 1, 64, 1, qnodes...)}
}

func (u *unitEnv) runN(id, q string, prio int32, gpus int) *preempt.Running {
	nodes, ones := make([]int, gpus), make([]int, gpus)
	for i := range nodes {
		nodes[i], ones[i] = u.next, 1
		u.next++
	}
	return u.run(id, q, prio, time.Hour, nodes, ones)
}

func weighted(n quota.NodeSpec, w float64) quota.NodeSpec {
	n.Weight = &w
	return n
}

var fairRules = quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny}

// victims runs a fair-sharing search and returns the victims' IDs and
// reasons (nil when there is no plan).
func fairVictims(t *testing.T, u *unitEnv, opt preempt.Options, q string, gpus int) map[string]preempt.Reason {
	req := u.req("in", q, 0, gpus, 1, "")
	req.FairSharing = true
	p, err := preempt.NewSearcher(opt).Victims(u.view(), req, nil)
	if err != nil {
		require.ErrorIs(t, err, preempt.ErrNoPlan)
		require.NotErrorIs(t, err, preempt.ErrInvalid)
		return nil
	}
	out := map[string]preempt.Reason{}
	for _, v := range p.Victims {
		out[v.ID] = v.Reason
	}
	return out
}

func threeQueues(nominal int64) []quota.NodeSpec {
	return []quota.NodeSpec{cohort("all", "", 0), queue("a", "all", nominal, fairRules),
		queue("b", "all", nominal, fairRules), queue("c", "all", nominal, fairRules)}
}

// After a's small workload goes, a and b borrow alike: Kueue ranks the
// queues again and takes b's next, where a share ranked once would keep
// taking from a.
func TestFairSharingRanksQueuesAgainAfterEachEviction(t *testing.T) {
	u := newUnitEnv(t, threeQueues(6)...)
	u.runN("a1", "a", 0, 1)
	u.runN("a2", "a", 0, 1)
	u.runN("a3", "a", 0, 6)
	u.runN("b1", "b", 0, 1)
	u.runN("b2", "b", 0, 1)
	u.runN("b3", "b", 0, 6)
	require.Equal(t, map[string]preempt.Reason{"a1": preempt.Reclaim, "b1": preempt.Reclaim},
		fairVictims(t, u, preempt.Options{}, "c", 4))
}

// No candidate passes S2-a; by default Kueue falls back to S2-b, one
// candidate per queue; with S2-a alone nothing is evicted.
func TestFairSharingFallsBackToLessThanInitialShare(t *testing.T) {
	build := func() *unitEnv {
		u := newUnitEnv(t, threeQueues(6)...)
		u.runN("b1", "b", 0, 4)
		u.runN("b2", "b", 0, 5)
		u.runN("c1", "c", 0, 4)
		u.runN("c2", "c", 0, 5)
		return u
	}
	require.Equal(t, map[string]preempt.Reason{"b1": preempt.FairSharing, "c1": preempt.FairSharing},
		fairVictims(t, build(), preempt.Options{}, "a", 7))
	s2a := preempt.Options{FairSharingStrategies: []preempt.FairSharingStrategy{preempt.LessThanOrEqualToFinalShare}}
	require.Nil(t, fairVictims(t, build(), s2a, "a", 7))
}

// The strategies are configurable: S2-b alone takes the low-priority
// workload first, S2-a alone only one whose eviction does not pass the
// imbalance on; a list Kueue refuses makes the search invalid.
func TestFairSharingStrategiesAsConfigured(t *testing.T) {
	build := func() *unitEnv {
		u := newUnitEnv(t, threeQueues(3)...)
		u.runN("a1", "a", 0, 3)
		u.runN("b_low", "b", 0, 5)
		u.runN("b_high", "b", 1, 1)
		return u
	}
	s2b := preempt.Options{FairSharingStrategies: []preempt.FairSharingStrategy{preempt.LessThanInitialShare}}
	require.Equal(t, map[string]preempt.Reason{"b_low": preempt.FairSharing}, fairVictims(t, build(), s2b, "a", 1))
	s2a := preempt.Options{FairSharingStrategies: []preempt.FairSharingStrategy{preempt.LessThanOrEqualToFinalShare}}
	require.Equal(t, map[string]preempt.Reason{"b_high": preempt.FairSharing}, fairVictims(t, build(), s2a, "a", 1))

	u := build()
	req := u.req("in", "a", 0, 1, 1, "")
	req.FairSharing = true
	bad := preempt.Options{FairSharingStrategies: []preempt.FairSharingStrategy{preempt.LessThanInitialShare, preempt.LessThanOrEqualToFinalShare}}
	_, err := preempt.NewSearcher(bad).Victims(u.view(), req, nil)
	require.ErrorIs(t, err, preempt.ErrInvalid)
}

// The preemptor's own queue competes in the ranking by its share with the
// request: when it borrows the most, its own lower-priority work goes
// first, and that alone makes room.
func TestFairSharingPreemptorQueueCompetesByItsShare(t *testing.T) {
	u := newUnitEnv(t, cohort("all", "", 0), queue("a", "all", 3, fairRules),
		queue("b", "all", 3, fairRules), queue("c", "all", 4, fairRules))
	u.runN("a_low", "a", -1, 1)
	u.runN("a1", "a", 0, 4)
	u.runN("b1", "b", 0, 1)
	u.runN("b2", "b", 0, 4)
	require.Equal(t, map[string]preempt.Reason{"a_low": preempt.InQueue}, fairVictims(t, u, preempt.Options{}, "a", 1))
}

// Under fair sharing, work reclaimed while the preemptor stays within its
// nominal quota is labelled Reclaim (Kueue's InCohortReclamation), not
// FairSharing.
func TestFairSharingReclaimWithinNominalIsLabelledReclaim(t *testing.T) {
	u := newUnitEnv(t, threeQueues(3)...)
	for _, id := range []string{"a1", "a2", "a3"} {
		u.runN(id, "a", 0, 1)
	}
	for _, id := range []string{"b1", "b2", "b3", "b4", "b5"} {
		u.runN(id, "b", 0, 1)
	}
	u.runN("c1", "c", 0, 1)
	require.Equal(t, map[string]preempt.Reason{"b1": preempt.Reclaim}, fairVictims(t, u, preempt.Options{}, "c", 1))
}

// Kueue labels a victim by its variant: work borrowWithinCohort lets the
// preemptor take while borrowing is ReclaimWhileBorrowing even when the
// plan ends within the preemptor's quota.
func TestReclaimWhileBorrowingLabelsTheCandidateVariant(t *testing.T) {
	rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority}}
	u := newUnitEnv(t, cohort("all", "", 0), queue("a", "all", 4, rules), queue("b", "all", 4, quota.Rules{}))
	u.runN("a_low", "a", -1, 2)
	u.runN("b_low", "b", -1, 2)
	u.runN("b_high", "b", 5, 4)
	p, err := preempt.NewSearcher(preempt.Options{}).Victims(u.view(), u.req("in", "a", 0, 4, 1, ""), nil)
	require.NoError(t, err)
	got := map[string]preempt.Reason{}
	for _, v := range p.Victims {
		got[v.ID] = v.Reason
	}
	require.False(t, p.Borrowing)
	require.Equal(t, map[string]preempt.Reason{"a_low": preempt.InQueue, "b_low": preempt.ReclaimWhileBorrowing}, got)
}

// LowerOrNewerEqualPriority compares queue-order times (Running.Submitted),
// not start times: the workload queued after the preemptor goes, though
// it started first.
func TestLowerOrNewerEqualPriorityComparesQueueOrderTime(t *testing.T) {
	u := newUnitEnv(t, queue("a", "", 2, quota.Rules{WithinQueue: quota.WithinQueueLowerOrNewerEqualPriority}))
	early := u.runN("started-first-queued-later", "a", 0, 1)
	early.Started, early.Submitted = t0.Add(-time.Hour), t0.Add(-time.Minute)
	late := u.runN("started-later-queued-first", "a", 0, 1)
	late.Started, late.Submitted = t0.Add(-time.Minute), t0.Add(-time.Hour)
	req := u.req("in", "a", 0, 1, 1, "")
	req.Submitted = t0.Add(-10 * time.Minute)
	p, err := preempt.NewSearcher(preempt.Options{}).Victims(u.view(), req, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"started-first-queued-later"}, ids(p))
}

// TestFairSharingTopologyVictimPassesAStrategy: the request fits quota
// as it is, but no node has room. b borrows 2; the victim that frees a
// node is b's, taken for topology: while a stays within its nominal
// quota it is reclaimed; while a borrows less than b it passes S2-b
// (FairSharing); once a would borrow as much as b no strategy lets it
// go, and the explanation is topology, not quota, which fits.
func TestFairSharingTopologyVictimPassesAStrategy(t *testing.T) {
	for _, tc := range []struct {
		nomA   int64
		want   []string
		reason preempt.Reason
	}{
		{4, []string{"b2"}, preempt.Reclaim},
		{3, []string{"b2"}, preempt.FairSharing},
		{2, nil, 0},
	} {
		t.Run(fmt.Sprintf("a nominal %d", tc.nomA), func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0), queue("a", "c", tc.nomA, fairRules),
				queue("b", "c", 6, fairRules), queue("x", "c", 6-tc.nomA, fairRules))
			e.run("b1", "b", 0, time.Hour, []int{0}, []int{2})
			e.run("b3", "b", 0, time.Hour, []int{0}, []int{2})
			e.run("b2", "b", 0, time.Minute, []int{1}, []int{4})
			r := e.req("new", "a", 0, 1, 4, "")
			r.FairSharing = true
			p, err := victims(t, e, r, nil)
			if tc.want == nil {
				var np *preempt.NoPlan
				require.ErrorAs(t, err, &np)
				assert.Equal(t, preempt.WhyTopology, np.Why)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, ids(p))
			assert.Equal(t, tc.reason, p.Victims[0].Reason)
			assert.Equal(t, tc.nomA < 4, p.Borrowing)
		})
	}
}

// The fair-sharing walk takes an elastic workload in the place of its
// whole eviction, priced whole, as it would were the workload not
// elastic: cheaper work of the same priority goes first, while its queue
// still borrows, rather than after the elastic workload whose surplus
// the eviction order puts first. Fill-back may still make it shrink.
//
// Two nodes of 4 GPUs under cohort c: a (nominal 4) asks for two pods of
// 2 GPUs within its nominal quota; b (nominal 2) borrows 2 with "small",
// 1 GPU on node 0, and "big", 3 GPUs on node 1 (3 one-GPU pods, minimum
// 1 when elastic), both at priority 4; x (nominal 0) runs "fixed" on
// node 0, GPUs that may not be preempted.
func TestFairSharingWalkTakesElasticWorkInItsWholeEvictionsPlace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elastic bool
		fixed   int // x's GPUs: what quota needs freed beyond 2
		want    []victimSummary
	}{
		{name: "quota needs all of b, not elastic", fixed: 2, want: []victimSummary{{ID: "small"}, {ID: "big"}}},
		{name: "quota needs all of b, elastic: both whole", elastic: true, fixed: 2, want: []victimSummary{{ID: "small"}, {ID: "big"}}},
		{name: "quota needs 2 GPUs, not elastic", want: []victimSummary{{ID: "big"}}},
		{name: "quota needs 2 GPUs, elastic: big shrinks", elastic: true, want: []victimSummary{{ID: "big", Pods: []int{2, 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0), queue("a", "c", 4, fairRules),
				queue("b", "c", 2, lower), queue("x", "c", 0, lower))
			e.run("small", "b", 4, time.Hour, []int{0}, []int{1})
			big := e.run("big", "b", 4, time.Hour, []int{1}, []int{3})
			if tc.elastic {
				elastic(big, 1)
			}
			if tc.fixed > 0 {
				e.run("fixed", "x", 0, time.Hour, []int{0}, []int{tc.fixed}).Preemptible = false
			}
			req := e.req("new", "a", 2, 2, 2, "")
			req.FairSharing = true
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, summarize(p))
			for _, v := range p.Victims {
				assert.Equal(t, preempt.Reclaim, v.Reason, "a stays within its nominal quota")
			}
		})
	}
}

// Under fair sharing, while the preemptor borrows, the rest of an elastic
// workload (which completes its eviction) passes the strategies as the
// workload's whole eviction would: its queue's share before it counts
// the surplus still running, even once the surplus is taken.
//
// Two nodes of 4 GPUs under cohort c: a (nominal 1) asks for 4 GPUs and
// borrows 3 with them; b (nominal 0) borrows 4 with "train", 4 GPUs on
// node 1 (4 one-GPU pods, minimum 1 when elastic): evicting it passes
// LessThanInitialShare (3 < 4), while its rest alone, after its surplus,
// would pass neither strategy (b's share 1, then 0). x (nominal 8) runs
// "pinned" on node 0, 1 GPU that may not be preempted. Quota fits
// already: only room binds.
func TestFairSharingJudgesAnElasticWorkloadsRestAsItsWholeEviction(t *testing.T) {
	for _, tc := range []struct {
		name      string
		elastic   bool
		pods, per int
		want      []victimSummary
	}{
		{name: "4-GPU pod, not elastic", pods: 1, per: 4, want: []victimSummary{{ID: "train"}}},
		{name: "4-GPU pod, elastic: whole", elastic: true, pods: 1, per: 4, want: []victimSummary{{ID: "train"}}},
		{name: "two 2-GPU pods, not elastic", pods: 2, per: 2, want: []victimSummary{{ID: "train"}}},
		{name: "two 2-GPU pods, elastic: train shrinks", elastic: true, pods: 2, per: 2, want: []victimSummary{{ID: "train", Pods: []int{3, 2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0), queue("a", "c", 1, fairRules),
				queue("b", "c", 0, lower), queue("x", "c", 8, lower))
			e.run("pinned", "x", 0, time.Hour, []int{0}, []int{1}).Preemptible = false
			train := e.run("train", "b", 0, time.Hour, []int{1}, []int{4})
			if tc.elastic {
				elastic(train, 1)
			}
			req := e.req("new", "a", 2, tc.pods, tc.per, "")
			req.FairSharing = true
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
			assert.Equal(t, preempt.FairSharing, p.Victims[0].Reason)
		})
	}
}

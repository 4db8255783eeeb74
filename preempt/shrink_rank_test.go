package preempt_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// elastic makes r a workload of 1-GPU pods, one per GPU it holds, that
// must keep minPods: it gives up its highest pod indexes first.
func elastic(r *preempt.Running, minPods int) {
	var pods []placement.Pod
	for _, x := range r.Nodes {
		for range x.GPUs {
			pods = append(pods, placement.Pod{PodSet: 0, Index: len(pods), Node: x.Node, GPUs: 1})
		}
	}
	r.Shrinkable = nil
	for i := len(pods) - 1; i >= 0; i-- {
		r.Shrinkable = append(r.Shrinkable, pods[i])
	}
	r.Keep = []int{minPods}
}

// victimSummary is one victim as the table tests compare it: its ID and,
// for a shrink, the pod indexes it gives up.
type victimSummary struct {
	ID   string
	Pods []int
}

func summarize(p preempt.Plan) []victimSummary {
	out := []victimSummary{}
	for _, v := range p.Victims {
		s := victimSummary{ID: v.ID}
		for _, pod := range v.Pods {
			s.Pods = append(s.Pods, pod.Index)
		}
		out = append(out, s)
	}
	return out
}

// The search's own choice prefers shrinking an elastic workload (its
// pods above its minimum) to evicting a whole workload of the same
// priority, even one that costs less to evict whole; lower priority still
// goes first, and a shrink that cannot make room is no shrink.
//
// Two nodes of 8 GPUs: "batch" runs 8 one-GPU pods on node 0 (minimum
// 2), "fixed" 4 GPUs on node 1 beside 4 GPUs of work that may not be
// preempted. The queue holds 16 GPUs of quota unless said otherwise.
func TestSearchPrefersShrinkingToEvicting(t *testing.T) {
	for _, tc := range []struct {
		name       string
		nominal    int64
		batchPrio  int32
		fixedPrio  int32
		batchAge   time.Duration // fixed is 1 h old
		pods, per  int
		required   string
		want       []victimSummary
		shrinkCost float64 // the lost work of the pods given up; 0: not checked
	}{
		{name: "4-GPU pod, quota binds", nominal: 16, batchPrio: 1, fixedPrio: 1, batchAge: time.Hour, pods: 1, per: 4,
			want: []victimSummary{{ID: "batch", Pods: []int{7, 6, 5, 4}}}, shrinkCost: 4 * (time.Hour + 3*time.Minute).Seconds()},
		{name: "4-GPU pod, topology binds", nominal: 32, batchPrio: 1, fixedPrio: 1, batchAge: time.Hour, pods: 1, per: 4,
			want: []victimSummary{{ID: "batch", Pods: []int{7, 6, 5, 4}}}},
		{name: "four 1-GPU pods, quota binds", nominal: 16, batchPrio: 1, fixedPrio: 1, batchAge: time.Hour, pods: 4, per: 1,
			want: []victimSummary{{ID: "batch", Pods: []int{7, 6, 5, 4}}}},
		{name: "evicting fixed would lose less work: still a shrink", nominal: 16, batchPrio: 1, fixedPrio: 1, batchAge: 10 * time.Hour, pods: 1, per: 4,
			want: []victimSummary{{ID: "batch", Pods: []int{7, 6, 5, 4}}}, shrinkCost: 4 * (10*time.Hour + 3*time.Minute).Seconds()},
		{name: "lower priority goes first, whole", nominal: 16, batchPrio: 1, fixedPrio: 0, batchAge: time.Hour, pods: 1, per: 4,
			want: []victimSummary{{ID: "fixed"}}},
		{name: "lower priority goes first, shrunk", nominal: 16, batchPrio: 0, fixedPrio: 1, batchAge: time.Hour, pods: 1, per: 4,
			want: []victimSummary{{ID: "batch", Pods: []int{7, 6, 5, 4}}}},
		{name: "8 GPUs on one node: only batch whole makes them", nominal: 16, batchPrio: 1, fixedPrio: 1, batchAge: time.Hour, pods: 1, per: 8,
			want: []victimSummary{{ID: "batch"}}},
		{name: "6 GPUs: its whole surplus", nominal: 16, batchPrio: 1, fixedPrio: 1, batchAge: time.Hour, pods: 6, per: 1,
			want: []victimSummary{{ID: "batch", Pods: []int{7, 6, 5, 4, 3, 2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 8, queue("a", "", tc.nominal, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}))
			batch := e.run("batch", "a", tc.batchPrio, tc.batchAge, []int{0}, []int{8})
			elastic(batch, 2)
			e.run("fixed", "a", tc.fixedPrio, time.Hour, []int{1}, []int{4})
			e.run("serving", "a", 1, time.Hour, []int{1}, []int{4}).Preemptible = false
			req := e.req("new", "a", 5, tc.pods, tc.per, tc.required)
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
			if tc.shrinkCost > 0 {
				require.Len(t, p.Victims, 1)
				assert.InDelta(t, tc.shrinkCost, p.Victims[0].Cost, 1e-6, "the lost work of the pods given up alone")
				assert.InDelta(t, tc.shrinkCost, p.LostGPUSeconds, 1e-6)
			}
		})
	}
}

// An elastic workload is one workload to a NoPlan's counts, though the
// search sees its surplus and its rest apart.
func TestNoPlanCountsAnElasticWorkloadOnce(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}))
	elastic(e.run("batch", "a", 9, time.Hour, []int{0}, []int{8}), 2)
	e.run("fixed", "a", 1, time.Hour, []int{1}, []int{4})
	e.run("serving", "a", 1, time.Hour, []int{1}, []int{4}).Preemptible = false
	req := e.req("new", "a", 5, 1, 8, "")
	_, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.Equal(t, 1, np.Candidates, "fixed")
	assert.Equal(t, preempt.Exclusions{Priority: 1, NotPreemptible: 1}, np.Excluded)
}

// A checkpoint of an elastic candidate files both its parts again: the
// index it leaves searches as one built with the checkpoint from the
// start (its surplus keeps its own key and cost).
func TestCheckpointOfAnElasticCandidateRefilesBothParts(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}))
	batch := e.run("batch", "a", 1, time.Hour, []int{0}, []int{8})
	elastic(batch, 2)
	e.run("fixed", "a", 1, 10*time.Minute, []int{1}, []int{4})
	e.run("serving", "a", 1, time.Hour, []int{1}, []int{4}).Preemptible = false
	req := e.req("new", "a", 5, 1, 4, "")

	v := e.view()
	saved := *batch
	w := *batch.W
	w.Drain.LastCheckpoint = t0.Add(-time.Minute)
	saved.W = &w
	require.NoError(t, v.Index.Update(saved))
	updated, err := preempt.NewSearcher(preempt.Options{}).Victims(v, req, nil)
	require.NoError(t, err)

	e.running[0].W = &w // batch (the pointer run returned predates later appends)
	fresh, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	assert.Equal(t, fresh, updated)
	assert.Equal(t, []victimSummary{{ID: "batch", Pods: []int{7, 6, 5, 4}}}, summarize(updated))
}

// Reclaiming from another queue takes an elastic workload whole while its
// queue borrows before it goes, as Kueue judges it, even when giving up
// its surplus alone would bring the queue back within quota: the rest
// completes the same eviction. Where the surplus alone makes room, the
// workload shrinks.
//
// Two nodes of 4 GPUs under cohort c: a (nominal 6) reclaims, b
// (nominal 3) borrows 1. Node 0: b's "train", 2 GPUs (2 one-GPU pods,
// minimum 1). Node 1: b's "leaving", 2 GPUs draining (first in eviction
// order: taking it for quota ends b's borrowing), and a's "pinned", 2
// GPUs that may not be preempted.
func TestReclaimEvictsElasticWorkWhoseSurplusEndsItsQueuesBorrowing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		elastic  bool
		per      int
		required string
		want     []victimSummary
	}{
		{name: "4-GPU pod, not elastic", per: 4, want: []victimSummary{{ID: "train"}}},
		{name: "4-GPU pod, elastic: whole", elastic: true, per: 4, want: []victimSummary{{ID: "train"}}},
		{name: "4-GPU pod on one node, elastic: whole", elastic: true, per: 4, required: "node", want: []victimSummary{{ID: "train"}}},
		{name: "3-GPU pod, not elastic", per: 3, want: []victimSummary{{ID: "train"}}},
		{name: "3-GPU pod, elastic: its surplus", elastic: true, per: 3, want: []victimSummary{{ID: "train", Pods: []int{1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0),
				queue("a", "c", 6, quota.Rules{ReclaimWithinCohort: quota.ReclaimLowerPriority}), queue("b", "c", 3, lower))
			train := e.run("train", "b", 0, time.Hour, []int{0}, []int{2})
			if tc.elastic {
				elastic(train, 1)
			}
			e.run("leaving", "b", 0, time.Hour, []int{1}, []int{2}).Draining = true
			e.run("pinned", "a", 0, time.Hour, []int{1}, []int{2}).Preemptible = false
			req := e.req("new", "a", 2, 1, tc.per, tc.required)
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
			assert.Equal(t, preempt.Reclaim, p.Victims[0].Reason)
		})
	}
}

// An elastic workload goes whole rather than shrink when that spares a
// victim of higher priority, even when what spares it is work the first
// fill-back dropped: there, draining work taken for quota first.
//
// Three nodes of 4 GPUs under cohort c: a (nominal 3) runs "mine", 2
// GPUs at priority 0 (2 one-GPU pods, minimum 1 when elastic), and asks
// for 2 more, which it may not borrow: mine must give up a GPU at least.
// b (nominal 0) borrows with "leaving", 1 GPU draining, and "batch", 2
// GPUs at priority 1; x (nominal 1) runs nothing. Node 2 is free: only
// quota binds, and 3 GPUs must go. Without leaving, batch holds 3 GPUs
// and must go anyway: mine shrinks.
func TestElasticWorkloadGoesWholeWhenThatSparesHigherPriorityWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elastic bool
		leaving bool
		want    []victimSummary
	}{
		{name: "not elastic", leaving: true, want: []victimSummary{{ID: "leaving"}, {ID: "mine"}}},
		{name: "elastic: whole, with leaving, spares batch", elastic: true, leaving: true, want: []victimSummary{{ID: "leaving"}, {ID: "mine"}}},
		{name: "nothing draining, not elastic", want: []victimSummary{{ID: "batch"}, {ID: "mine"}}},
		{name: "nothing draining, elastic: batch goes, mine shrinks", elastic: true, want: []victimSummary{{ID: "batch"}, {ID: "mine", Pods: []int{1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority}
			e := newEnv(t, 1, 1, 3, 4, cohort("c", "", 0), queue("a", "c", 3, rules),
				queue("b", "c", 0, lower), queue("x", "c", 1, lower))
			mine := e.run("mine", "a", 0, time.Hour, []int{0}, []int{2})
			if tc.elastic {
				elastic(mine, 1)
			}
			batch := 3
			if tc.leaving {
				e.run("leaving", "b", 0, time.Hour, []int{0}, []int{1}).Draining = true
				batch = 2
			}
			e.run("batch", "b", 1, time.Hour, []int{1}, []int{batch})
			req := e.req("new", "a", 2, 1, 2, "")
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
			assert.False(t, p.Borrowing)
		})
	}
}

// Work already draining stops nothing new: a set of draining victims
// alone ranks below any set that stops or shrinks running work, whatever
// the draining work's priority.
//
// Two nodes of 4 GPUs, one queue; the request is one 2-GPU pod on one
// node. Node 0 holds "leaving", 2 GPUs at priority 1, draining, beside
// 2 GPUs that may not be preempted; node 1 "gone", 1 GPU at priority 0,
// draining, beside "batch", 3 GPUs at priority 0 (3 one-GPU pods,
// minimum 2 when elastic). Node 0 needs leaving alone; node 1 batch
// whole, or gone and a GPU of batch.
func TestSearchTakesDrainingWorkRatherThanStopRunningWork(t *testing.T) {
	for _, tc := range []struct {
		name     string
		elastic  bool
		draining bool // leaving is draining
		want     []victimSummary
	}{
		{name: "batch not elastic", draining: true, want: []victimSummary{{ID: "leaving"}}},
		{name: "batch elastic", elastic: true, draining: true, want: []victimSummary{{ID: "leaving"}}},
		{name: "leaving running, batch not elastic: lower priority goes", want: []victimSummary{{ID: "batch"}}},
		{name: "leaving running, batch elastic: it shrinks", elastic: true, want: []victimSummary{{ID: "gone"}, {ID: "batch", Pods: []int{2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, queue("a", "", 16, lower))
			e.run("leaving", "a", 1, time.Hour, []int{0}, []int{2}).Draining = tc.draining
			e.run("fixed", "a", 0, time.Hour, []int{0}, []int{2}).Preemptible = false
			e.run("gone", "a", 0, time.Hour, []int{1}, []int{1}).Draining = true
			batch := e.run("batch", "a", 0, time.Hour, []int{1}, []int{3})
			if tc.elastic {
				elastic(batch, 2)
			}
			req := e.req("new", "a", 5, 1, 2, "node")
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
		})
	}
}

// When what a queue may lose runs out before the cell holds the gang,
// the frugal fill judges the rest of an elastic workload as the whole
// eviction it completes, by all of the workload's GPUs: so it goes after
// smaller work of its queue, as it would were it not elastic, instead of
// ending the queue's borrowing before that work can go.
//
// Two nodes of 4 GPUs under cohort c: a (nominal 7) runs "fixed", 1 GPU
// that may not be preempted, on node 0 and asks for three 2-GPU pods; b
// (nominal 3) borrows 3 GPUs with "small", 2 GPUs at priority 1 on node
// 0, and "batch", 4 GPUs at priority 0 on node 1 (4 one-GPU pods,
// minimum 2 when elastic). 3 GPUs must go for quota and both nodes must
// be freed: small first, then batch whole, which b still borrows for.
func TestFrugalFillTakesAnElasticWorkloadWholeAfterSmallerWorkOfItsQueue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elastic bool
		want    []victimSummary
	}{
		{name: "not elastic", want: []victimSummary{{ID: "small"}, {ID: "batch"}}},
		{name: "elastic", elastic: true, want: []victimSummary{{ID: "batch"}, {ID: "small"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0),
				queue("a", "c", 7, quota.Rules{ReclaimWithinCohort: quota.ReclaimLowerPriority}), queue("b", "c", 3, lower))
			e.run("fixed", "a", 0, time.Hour, []int{0}, []int{1}).Preemptible = false
			e.run("small", "b", 1, time.Hour, []int{0}, []int{2})
			batch := e.run("batch", "b", 0, time.Hour, []int{1}, []int{4})
			if tc.elastic {
				elastic(batch, 2)
			}
			req := e.req("new", "a", 2, 3, 2, "")
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
		})
	}
}

// A cell whose fill fails with elastic work met in parts is tried again
// with each elastic workload whole, in the place of its whole eviction:
// under fair sharing, a surplus taken first, at its place before whole
// evictions, can bring its queue's share down so far that the smaller
// work the room also needs no longer passes the strategies, which the
// workload's whole eviction, taken after that work, leaves it.
//
// Four nodes of 4 GPUs under cohort c (nominal 0): a (nominal 7) runs
// "own", 4 GPUs on node 0 that may not be preempted, and asks for one
// 4-GPU pod, which makes it borrow; x (nominal 2) borrows 3 GPUs with
// "small", 1 GPU, and "batch", 3 GPUs (3 one-GPU pods, minimum 1 when
// elastic), both at priority 4 on node 1, and "leaving", 1 GPU draining
// on node 3; b (nominal 4) holds 1 GPU on nodes 2 and 3 that may not be
// preempted. Only node 1 can be freed: small, then batch whole.
func TestCellRetriedWithElasticWorkWholeWhenItsPartsSpendTheQueuesShare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elastic bool
	}{{name: "not elastic"}, {name: "elastic", elastic: true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 2, 2, 4, cohort("c", "", 0),
				queue("a", "c", 7, quota.Rules{ReclaimWithinCohort: quota.ReclaimAny}), queue("b", "c", 4, lower), queue("x", "c", 2, lower))
			e.run("own", "a", 0, time.Hour, []int{0}, []int{4}).Preemptible = false
			e.run("b1", "b", 0, time.Hour, []int{2}, []int{1}).Preemptible = false
			e.run("b2", "b", 0, time.Hour, []int{3}, []int{1}).Preemptible = false
			leaving := e.run("leaving", "x", 0, time.Hour, []int{3}, []int{1})
			leaving.Preemptible, leaving.Draining = false, true
			e.run("small", "x", 4, time.Hour, []int{1}, []int{1})
			batch := e.run("batch", "x", 4, time.Hour, []int{1}, []int{3})
			if tc.elastic {
				elastic(batch, 1)
			}
			req := e.req("new", "a", 2, 1, 4, "")
			req.FairSharing = true
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, []victimSummary{{ID: "small"}, {ID: "batch"}}, summarize(p))
		})
	}
}

// Sets of work already draining alone rank alike, whatever its
// priorities: cost, then the number of victims, then the lowest cell
// decide between them, not the draining work's priority.
//
// Two nodes of 4 GPUs, one queue; the request is one 4-GPU pod on one
// node. "high" holds 4 GPUs at priority 1 and "low" 4 GPUs at priority
// 0; each is draining unless said otherwise.
func TestDrainingWorkTiesWhateverItsPriority(t *testing.T) {
	for _, tc := range []struct {
		name        string
		highOn      int // low is on the other node
		lowDraining bool
		want        []victimSummary
	}{
		{name: "high on the lower cell", highOn: 0, lowDraining: true, want: []victimSummary{{ID: "high"}}},
		{name: "low on the lower cell", highOn: 1, lowDraining: true, want: []victimSummary{{ID: "low"}}},
		{name: "low running: high, draining, goes", highOn: 1, want: []victimSummary{{ID: "high"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, queue("a", "", 16, lower))
			e.run("high", "a", 1, time.Hour, []int{tc.highOn}, []int{4}).Draining = true
			e.run("low", "a", 0, time.Hour, []int{1 - tc.highOn}, []int{4}).Draining = tc.lowDraining
			req := e.req("new", "a", 5, 1, 4, "node")
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
		})
	}
}

// An elastic workload the room needs whole on one node gives back only
// the pods it can keep on another, when they are at least its minimum:
// it shrinks to them; below its minimum it goes whole.
//
// Two nodes of 4 GPUs, one queue: "batch" runs 6 one-GPU pods, 0 to 3 on
// node 0 and 4 and 5 on node 1, beside 2 GPUs of node 1 that may not be
// preempted. The request is one 4-GPU pod: only node 0 can hold it, so
// the search takes batch whole; pods 4 and 5 can stay.
func TestWholeVictimShrinksBackToThePodsItCanKeepElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name    string
		minPods int
		want    []victimSummary
	}{
		{name: "minimum 1: keeps two pods", minPods: 1, want: []victimSummary{{ID: "batch", Pods: []int{3, 2, 1, 0}}}},
		{name: "minimum 2: keeps exactly its minimum", minPods: 2, want: []victimSummary{{ID: "batch", Pods: []int{3, 2, 1, 0}}}},
		{name: "minimum 3: goes whole", minPods: 3, want: []victimSummary{{ID: "batch"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, queue("a", "", 16, lower))
			elastic(e.run("batch", "a", 0, time.Hour, []int{0, 1}, []int{4, 2}), tc.minPods)
			e.run("fixed", "a", 0, time.Hour, []int{1}, []int{2}).Preemptible = false
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), e.req("new", "a", 1, 1, 4, ""), nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
			assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 4}}, p.Target.NodeGPUs())
		})
	}
}

// The retry with elastic workloads whole offers a workload on a node
// where its surplus runs and its rest does not: its rest, which
// completes the eviction, brings the surplus along there.
//
// As in TestCellRetriedWithElasticWorkWholeWhenItsPartsSpendTheQueuesShare,
// with batch's first pod (its minimum, 1) on node 2 beside b's: node 1
// holds small and batch's pods 1 and 2, and 1 GPU is free there.
func TestCellRetriedWithElasticWorkWholeWhoseRestRunsElsewhere(t *testing.T) {
	e := newEnv(t, 1, 2, 2, 4, cohort("c", "", 0),
		queue("a", "c", 7, quota.Rules{ReclaimWithinCohort: quota.ReclaimAny}), queue("b", "c", 4, lower), queue("x", "c", 2, lower))
	e.run("own", "a", 0, time.Hour, []int{0}, []int{4}).Preemptible = false
	e.run("b1", "b", 0, time.Hour, []int{2}, []int{1}).Preemptible = false
	e.run("b2", "b", 0, time.Hour, []int{3}, []int{1}).Preemptible = false
	leaving := e.run("leaving", "x", 0, time.Hour, []int{3}, []int{1})
	leaving.Preemptible, leaving.Draining = false, true
	e.run("small", "x", 4, time.Hour, []int{1}, []int{1})
	elastic(e.run("batch", "x", 4, time.Hour, []int{2, 1}, []int{1, 2}), 1)
	req := e.req("new", "a", 2, 1, 4, "")
	req.FairSharing = true
	p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	assert.Equal(t, []victimSummary{{ID: "small"}, {ID: "batch", Pods: []int{2, 1}}}, summarize(p))
	assert.Equal(t, []placement.NodeGPUs{{Node: 1, GPUs: 4}}, p.Target.NodeGPUs())
}

// Under fair sharing a preemptor above its nominal quota takes no work
// of a queue whose share stays below its own: neither an elastic
// workload, in parts or whole, nor work already draining. Within its
// nominal quota it needs no strategy, and the draining work, which stops
// nothing, is the victim.
//
// Two leaves of two 4-GPU nodes under cohort c: b (nominal 8) runs
// "batch", 8 one-GPU pods over nodes 0 and 1 (minimum 1), and "leaving",
// 1 GPU draining on node 3; a runs 3 GPUs of draining work on node 2,
// which its rules (no preemption within the queue) leave alone, and asks
// for two 2-GPU pods; x (nominal 8) runs nothing. Node 3 holds one pod,
// both once leaving is gone.
func TestFairSharingTakesElasticWorkOnlyWhereTheStrategiesAllow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nominalA int64
		want     []victimSummary // nil: no plan
	}{
		{name: "borrowing: batch's queue shares less", nominalA: 0},
		{name: "within nominal: the draining work goes", nominalA: 8, want: []victimSummary{{ID: "leaving"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 2, 2, 4, cohort("c", "", 0),
				queue("a", "c", tc.nominalA, quota.Rules{ReclaimWithinCohort: quota.ReclaimLowerPriority}),
				queue("b", "c", 8, lower), queue("x", "c", 8, lower))
			for i := range 3 {
				own := e.run(fmt.Sprintf("own-%d", i), "a", 0, time.Minute, []int{2}, []int{1})
				own.Preemptible, own.Draining = false, true
			}
			elastic(e.run("batch", "b", 0, time.Minute, []int{0, 1}, []int{4, 4}), 1)
			leaving := e.run("leaving", "b", 0, time.Minute, []int{3}, []int{1})
			leaving.Preemptible, leaving.Draining = false, true
			req := e.req("new", "a", 2, 2, 2, "")
			req.FairSharing = true
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			if tc.want == nil {
				var np *preempt.NoPlan
				require.ErrorAs(t, err, &np)
				assert.Equal(t, preempt.WhyTopology, np.Why)
				assert.Equal(t, 2, np.Candidates) // batch's surplus and rest
				assert.Equal(t, preempt.Exclusions{QueueRule: 3}, np.Excluded)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
		})
	}
}

// When every GPU but one that the cohort can give back is needed for
// quota, an elastic workload among them goes whole, beside work already
// draining, and the gang takes the leaf its pods fit in.
//
// Two leaves of two 4-GPU nodes under cohort c (nominal 0): a (nominal
// 2, reclaiming and borrowing within the cohort below its priority, no
// threshold above 0) runs "a0-gone", draining on node 0 and counted as
// gone, "a1-draining", 1 GPU draining on node 0, and "a2-elastic", 2
// one-GPU pods on node 2 (minimum 1); x (nominal 2) runs 3 GPUs of
// draining work on nodes 2 and 3; b (nominal 5) runs nothing. The
// request, two 4-GPU pods in a leaf, needs 6 GPUs back for quota of the
// 7 there are.
func TestQuotaNeedsTheElasticWorkloadWholeBesideDrainingWork(t *testing.T) {
	th := int32(0)
	rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
	type work struct {
		id, q    string
		node     int
		gpus     int
		draining bool
	}
	running := []work{
		{"a0-gone", "a", 0, 1, true},
		{"a1-draining", "a", 0, 1, true},
		{"a2-elastic", "a", 2, 2, false},
		{"x3-draining", "x", 2, 2, true},
		{"x4-draining", "x", 3, 1, true},
	}
	// The same workloads indexed in the other order: node 2 lists them
	// the other way round.
	reversed := slices.Clone(running)
	slices.Reverse(reversed)
	for _, tc := range []struct {
		name    string
		running []work
	}{{"indexed by ID", running}, {"indexed in reverse", reversed}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 2, 2, 4, cohort("c", "", 0), queue("a", "c", 2, rules), queue("b", "c", 5, lower), queue("x", "c", 2, lower))
			for _, w := range tc.running {
				r := e.run(w.id, w.q, 0, time.Minute, []int{w.node}, []int{w.gpus})
				r.Preemptible, r.Draining = !w.draining, w.draining
				if w.id == "a2-elastic" {
					elastic(r, 1)
				}
			}
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), e.req("new", "a", 2, 2, 4, "leaf"), map[string]bool{"a0-gone": true})
			require.NoError(t, err)
			assert.Equal(t, []victimSummary{{ID: "x3-draining"}, {ID: "a1-draining"}, {ID: "a2-elastic"}}, summarize(p))
			var reasons []preempt.Reason
			for _, v := range p.Victims {
				reasons = append(reasons, v.Reason)
			}
			assert.Equal(t, []preempt.Reason{preempt.ReclaimWhileBorrowing, preempt.InQueue, preempt.InQueue}, reasons)
			assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 4}, {Node: 1, GPUs: 4}}, p.Target.NodeGPUs())
			assert.True(t, p.Borrowing)
		})
	}
}

// An elastic workload goes whole when that spares a victim of the set's
// highest priority whose eviction costs more, though another victim of
// that priority stays: the set's rank is the same and its cost lower.
//
// As in TestElasticWorkloadGoesWholeWhenThatSparesHigherPriorityWork,
// with b's priority-1 work in two workloads: "batch", 2 GPUs started
// 10 h ago, and "extra", 1 GPU; 4 GPUs must go. Leaving, extra and mine
// whole free them without batch; batch with leaving frees 3 and mine
// must shrink for the fourth.
func TestElasticWorkloadGoesWholeWhenThatSparesCostlierWorkOfItsRank(t *testing.T) {
	for _, tc := range []struct {
		name     string
		elastic  bool
		batchAge time.Duration
		want     []victimSummary
	}{
		{name: "not elastic", batchAge: 10 * time.Hour, want: []victimSummary{{ID: "leaving"}, {ID: "extra"}, {ID: "mine"}}},
		{name: "elastic: whole, spares batch", elastic: true, batchAge: 10 * time.Hour,
			want: []victimSummary{{ID: "leaving"}, {ID: "extra"}, {ID: "mine"}}},
		{name: "elastic, batch the cheaper: mine shrinks", elastic: true, batchAge: time.Minute,
			want: []victimSummary{{ID: "leaving"}, {ID: "batch"}, {ID: "mine", Pods: []int{1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority}
			e := newEnv(t, 1, 1, 3, 4, cohort("c", "", 0), queue("a", "c", 3, rules),
				queue("b", "c", 0, lower), queue("x", "c", 1, lower))
			mine := e.run("mine", "a", 0, time.Hour, []int{0}, []int{2})
			if tc.elastic {
				elastic(mine, 1)
			}
			e.run("leaving", "b", 0, time.Hour, []int{0}, []int{1}).Draining = true
			e.run("batch", "b", 1, tc.batchAge, []int{1}, []int{2})
			e.run("extra", "b", 1, time.Hour, []int{1}, []int{1})
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), e.req("new", "a", 2, 1, 2, ""), nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
		})
	}
}

// Under fair sharing, elastic workloads of one priority and queue are
// taken in the order of their whole evictions' costs: the one of less
// unsaved work gives up its surplus pod, whichever node it runs on.
//
// Cohort c (nominal 0) of a (nominal 4) and b (nominal 0); b borrows
// with "x" and "y", two one-GPU pods each (minimum 1), on nodes 0 and 1
// of 4 GPUs. The request's GPU needs one of b's back.
func TestFairSharingShrinksTheElasticWorkloadOfLeastUnsavedWork(t *testing.T) {
	for _, tc := range []struct {
		name       string
		xAge, yAge time.Duration
		want       []victimSummary
	}{
		{name: "x younger", xAge: time.Minute, yAge: time.Hour, want: []victimSummary{{ID: "x", Pods: []int{1}}}},
		{name: "y younger", xAge: time.Hour, yAge: time.Minute, want: []victimSummary{{ID: "y", Pods: []int{1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, cohort("c", "", 0),
				queue("a", "c", 4, quota.Rules{ReclaimWithinCohort: quota.ReclaimLowerPriority}),
				queue("b", "c", 0, lower))
			elastic(e.run("x", "b", 0, tc.xAge, []int{0}, []int{2}), 1)
			elastic(e.run("y", "b", 0, tc.yAge, []int{1}, []int{2}), 1)
			req := e.req("new", "a", 2, 1, 1, "")
			req.FairSharing = true
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, summarize(p))
		})
	}
}
